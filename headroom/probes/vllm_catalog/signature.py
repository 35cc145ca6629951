"""The catalog's data types and constants: the Signature record, the releases read, the prefix
forms vLLM prints (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NOT_CONFIG", "PREFIX_FORMS", "RELEASES", "Signature"]

# The releases read, oldest first: the wheel, its sha256, and the git commit where the
# wheel names one (vllm/commit_id.py or _version.py; older wheels carry none).
RELEASES: dict[str, dict[str, str]] = {
    "0.2.7": {"wheel": "vllm-0.2.7-cp311-cp311-manylinux1_x86_64.whl",
              "sha256": "adb96ec1c18b40f59cefb849425be4d1a247ab6489b69ff072867d62ffe83ce4"},
    "0.3.3": {"wheel": "vllm-0.3.3-cp311-cp311-manylinux1_x86_64.whl",
              "sha256": "12676b8fae922fff52bdb029b5295692a1393be800e5eec8fe3ee8eef7c080fd"},
    "0.4.3": {"wheel": "vllm-0.4.3-cp311-cp311-manylinux1_x86_64.whl",
              "sha256": "921fb85d4823c00f242a3fa3c4e724ea56d82375b9bedbbb4e32c4d53fa6a1b2"},
    "0.5.5": {"wheel": "vllm-0.5.5-cp38-abi3-manylinux1_x86_64.whl",
              "sha256": "64fb5b8a3300af3006a3b9ba4eacdf5f4bd2a85887a695e6587684447c49eb8e",
              "commit": "09c7792610ada9f88bbf87d32b472dd44bf23cc2"},
    "0.6.4.post1": {"wheel": "vllm-0.6.4.post1-cp38-abi3-manylinux1_x86_64.whl",
                    "sha256": "dc151793688376904ca54129a4aa0b83aed9d7ad8e458666775f62b37ecbddcc"},
    "0.6.6.post1": {"wheel": "vllm-0.6.6.post1-cp38-abi3-manylinux1_x86_64.whl",
                    "sha256": "07cd8b4bc6368b5ce37ea14936d6941021ac2ac032e2731f1de108a1e499cab4"},
    "0.7.3": {"wheel": "vllm-0.7.3-cp38-abi3-manylinux1_x86_64.whl",
              "sha256": "b8a593711ee0d798c3b95068988440cf4aa3d5d30dfc2ee9c2276acb6ecf8277"},
    "0.8.5": {"wheel": "vllm-0.8.5-cp38-abi3-manylinux1_x86_64.whl",
              "sha256": "74bfe92953bee1269c1e1c27827bc156777751cdd6a3457ee8e27dd8ebf1e247"},
    "0.9.2": {"wheel": "vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl",
              "sha256": "f3c5da29a286f4933b480a5b4749fab226564f35c96928eeef547f88d385cd34"},
    "0.10.2": {"wheel": "vllm-0.10.2-cp38-abi3-manylinux1_x86_64.whl",
               "sha256": "e0cba6110483d9bf25c4402d8655cf78d366dd13e4155210980cc3480ed98b7b",
               "commit": "26b999c71"},
    "0.11.0": {"wheel": "vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl",
               "sha256": "3861c75ff2b12e24f6d179ff5c084d791b42ded8675d76c8706697c79f68cd62",
               "commit": "f71952c1c"},
    "0.14.1": {"wheel": "vllm-0.14.1-cp38-abi3-manylinux_2_31_x86_64.whl",
               "sha256": "435565a8299a5fcdbf5af4a798e342ddeec3f90df83c8227cc204bdebca19494",
               "commit": "d7de043d5"},
    "0.17.1": {"wheel": "vllm-0.17.1-cp38-abi3-manylinux_2_31_x86_64.whl",
               "sha256": "c52e892309532b4e51cb94d022c5e3c0087300cdb56e4645708601443299d871",
               "commit": "95c0f928c"},
    "0.20.2": {"wheel": "vllm-0.20.2-cp38-abi3-manylinux_2_35_x86_64.whl",
               "sha256": "22a7dd06eb03371298e13d6100f3dedbf307352342aaf08e87c929c60aae9b4d",
               "commit": "bc150f502"},
    "0.25.1": {"wheel": "vllm-0.25.1-cp38-abi3-manylinux_2_28_x86_64.whl",
               "sha256": "16fc7a28df1576eb6f7ca0455026551b8f9adb674c19c66059359ef3e964bd1e",
               "commit": "752a3a504"},
    "0.32.0": {"wheel": "vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl",
               "sha256": "5e2ecdc5b0baf72921c288486417ca82778456a448e4fe60b62ee43c0dfc8611",
               "commit": "5df63a720"},
    "0.33.0": {"wheel": "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl",
               "sha256": "4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa",
               "commit": "4ba787ec9"},
}  # fmt: skip

NOT_CONFIG = "not a configuration problem (upgrade / known bug)"

# The prefixes vLLM's lines are printed with, by era (vllm/logger.py _FORMAT of each
# release; process tags from multiproc_worker_utils._add_prefix (V0), multiproc_executor
# (V1: "VllmWorker rank=N" in 0.8-0.9, "Worker_TPn" since 0.10), core.py ("EngineCore_DPn"),
# Ray's own stdout relay, and torch.distributed's "[rankN]:"). `{file}` is the printing file.
PREFIX_FORMS: dict[str, str] = {
    "v0_plain": "INFO 05-09 00:49:33 {file}:1057] ",  # 0.2-0.7: no bracket before the file
    "v0_worker": "(VllmWorkerProcess pid=236) INFO 08-23 08:25:25 {file}:226] ",
    "ray_worker": "(RayWorkerWrapper pid=3161, ip=10.0.0.2) INFO 02-11 07:40:45 {file}:1115] ",
    "ray_actor": "(LLMRayActor pid=3161) INFO 02-11 07:40:45 {file}:1115] ",
    "v1_plain": "INFO 04-30 12:00:00 [{file}:58] ",  # 0.8-0.9
    "v1_worker_rank": "(VllmWorker rank=1 pid=1234) INFO 04-30 12:00:00 [{file}:58] ",
    "engine_core": "(EngineCore_DP0 pid=8884) INFO 11-29 11:24:21 [{file}:133] ",  # 0.10+
    "api_server": "(APIServer pid=20756) INFO 11-29 11:24:21 [{file}:133] ",
    "worker_tp": "(Worker_TP1 pid=448) INFO 11-29 11:24:21 [{file}:133] ",
    "rank": "[rank0]: ",  # torch.distributed relays a rank's stderr
    "proc_only": "(EngineCore_DP0 pid=8884) ",  # a traceback relayed line by line
    "bare": "",
}


@dataclass(frozen=True)
class Signature:
    """One text of the catalog (see the module docstring)."""

    id: str
    kind: str | None  # the LogEvent kind; None: recognised, never an event
    severity: str  # "info" | "warning" | "error"
    needles: tuple[str, ...]  # at least one must be in the message
    pattern: str | None = None  # regex for the fields (searched in the message)
    extract: str | None = None  # name of a field extractor (vllm_log_fields.EXTRACTORS)
    require_match: bool = True  # False: the needle alone classifies, the regex adds fields
    origin: str = "log"
    probe: tuple[str, ...] = ()  # literal pieces of the source text (provenance lookup)
    fields: tuple[str, ...] = ()  # the numbers/values it carries
    feeds: str = ""  # the doctor rule / fact it feeds, or NOT_CONFIG
    examples: tuple[str, ...] = ()  # real messages (without prefix)
    library: str = ""  # for non-vLLM origins: which library prints it
    quoted: bool = False  # the text itself sits inside quotes (Triton's ValueError("..."))
    # Clauses from the middle or end of a long text, each found in no other entry's text: a
    # line holding one is this text without its start (a paste that wrapped or quoted part
    # of it). Their fields come from the regex when it still matches.
    fragments: tuple[str, ...] = ()
    generic: bool = False  # matches any exception or config error: specific texts win over it
    # filled from provenance.py:
    releases: tuple[str, ...] = ()  # releases read that contain the text
    sources: tuple[str, ...] = ()  # "release: path:line" in vLLM's source
    printed_by: tuple[str, ...] = ()  # file names in the prefix of a logger line

    @property
    def anywhere(self) -> bool:
        """Printed by something other than one known vLLM logger call."""
        return self.origin != "log"
