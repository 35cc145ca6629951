"""Host-memory OOMs are not GPU OOMs: Ray's memory monitor's OutOfMemoryError (hiyouga/EasyR1
#59) names the host's RAM, and a person's "(ray oom)" or "OOMKilled" names no GPU; the doctor
must not lower gpu_memory_utilization or raise TP for them."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose, parse_gpu_spec
from headroom.probes.vllm_log import digest_text

# hiyouga/EasyR1#59, as pasted (the ids shortened)
RAY_OOM = (
    "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
    "Memory on the node (IP: 1xx, ID: dbef7e7a) where the task (task ID: 9238c22a, name=main_task, "
    "pid=3103112, memory used=0.87GB) was running was 726.33GB / 760.00GB (0.9557), which exceeds "
    "the memory usage threshold of 0.95. Ray killed this worker (ID: 9d97ec7c) because it was the "
    "most recently scheduled task\n"
)


def test_rays_memory_monitor_is_host_memory_and_turns_no_knob():
    """Before: the catalog's "OutOfMemoryError" needle read it as a CUDA OOM (lower the
    GPU memory utilization)."""
    digest = digest_text(RAY_OOM)
    assert [e.kind for e in digest.facts().failures] == ["host_oom"]
    d = diagnose(DoctorInputs(log=digest, gpu_spec=parse_gpu_spec("8xA100:40")))
    assert d.findings[0].id == "host-oom"
    assert not any(f.actions for f in d.findings)
    assert not any(f.id.startswith("cuda-oom") for f in d.findings)


def test_words_for_a_host_oom_give_no_gpu_finding():
    for words in ("Task was killed due to the node running low on memory (ray oom)",
                  "vLLM pod OOMKilled after a few requests"):  # fmt: skip
        d = diagnose(DoctorInputs(log=words + "\n", gpu_spec=parse_gpu_spec("1xA100:80")))
        assert not any(f.id.startswith("cuda-oom") for f in d.findings), words
        assert not any(f.actions for f in d.findings), words
