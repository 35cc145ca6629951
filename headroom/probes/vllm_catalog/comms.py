"""Catalog entries: the lines a multi-GPU start prints while its GPUs set up communication.

None of them is a failure. Together they are the stage a start reached: a start whose log
ends on them, with no error and nothing after (weights, profile, KV cache, server), hangs in
communication set-up (probes/symptom_hang.py; doctor/rules_hang.py). In vLLM's start-up
order (V0 0.4-0.10 `multiproc_worker_utils` / `worker.py`, V1 `gpu_worker.py`):

1. the worker processes start ("Worker ready; awaiting tasks", V0's multiprocessing
   workers; the executor's message queue handle, 0.5.5+);
2. torch.distributed and NCCL come up ("world_size=N rank=R ... backend=nccl", INFO only in
   0.33's not-yet-initialised branch, debug before; "Found nccl from library", "vLLM is using
   nccl==X"; NCCL's own `NCCL INFO` lines with NCCL_DEBUG=INFO);
3. the custom all-reduce checks peer-to-peer access between the GPUs (its P2P test writes
   "generating GPU P2P access cache in PATH" once, then every rank reads it back; 0.4.3+;
   "Skipping P2P check ..." with VLLM_SKIP_P2P_CHECK=1) and, in 0.32+, the all-reduce
   backends of each group are chosen;
4. the parallel groups are ready ("rank R in world size N is assigned as DP rank ...",
   0.8.5+): communication is up, model loading follows. That one is `distributed_ready`.

The examples are real lines: the 0.6 V0 start of a public blog post about a TP 2 hang
("(vLLM) When loading the weights, occurs infinite loading problem"), vllm-project/vllm
#6895 and #8735 (stuck at "generating GPU P2P access cache"), #5484 (a hang after NCCL's
INFO lines), #14452 (0.8's message queue handle), a V1 0.8 TP 2 start pasted in a public
repository (`(VllmWorker rank=N pid=N)` prefixes: the rank line) and a 0.33 TP 2 start of a
public 2x RTX 3090 report (the process group, nccl==2.28.9, all-reduce backends lines).
The provenance (releases, files) is read from the wheels (provenance.py).
"""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import Signature as S

_FEEDS = "comms-hang: a start whose log ends here hangs in communication set-up"

ENTRIES: tuple[S, ...] = (
    S("mp_worker_ready", "distributed_init", "info", ("Worker ready; awaiting tasks",),
      probe=("Worker ready; awaiting tasks",), feeds=_FEEDS + " (V0's worker processes started)",
      examples=("Worker ready; awaiting tasks",)),
    S("message_queue_handle", "distributed_init", "info", ("vLLM message queue communication handle",),
      r"local_reader_ranks=\[(?P<reader_ranks>[\d, ]*)\]", require_match=False,
      probe=("vLLM message queue communication handle",), fields=("reader_ranks",),
      feeds=_FEEDS + " (the executor's shared-memory queue to its workers)",
      examples=("vLLM message queue communication handle: Handle(connect_ip='127.0.0.1', local_reader_ranks=[1], "
                "buffer=<vllm.distributed.device_communicators.shm_broadcast.ShmRingBuffer object at 0x71fcf35674f0>, "
                "local_subscribe_port=52931, local_sync_port=59409, remote_subscribe_port=None, "
                "remote_sync_port=None)",
                "vLLM message queue communication handle: Handle(local_reader_ranks=[0, 1], buffer_handle=(2, "
                "10485760, 10, 'psm_765c309d'), local_subscribe_addr='ipc:///tmp/7ec7dbbe-b9b8-40ca-a581-"
                "66b4b2dff0f3', remote_subscribe_addr=None, remote_addr_ipv6=False)")),
    S("torch_distributed_init", "distributed_init", "info", ("distributed_init_method=",),
      r"world_size=(?P<world_size>\d+) rank=(?P<rank>\d+) local_rank=\d+ distributed_init_method=\S+ "
      r"backend=(?P<backend>\w+)",
      probe=("distributed_init_method=%s backend=%s",), fields=("world_size", "rank", "backend"),
      feeds=_FEEDS + " (torch.distributed's process group)",
      examples=("world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:49309 backend=nccl",)),
    S("nccl_library_found", "distributed_init", "info", ("Found nccl from library", "Found nccl from environment"),
      r"Found nccl from (?:library |environment variable VLLM_NCCL_SO_PATH=)(?P<library>\S+)",
      probe=("Found nccl from library", "Found nccl from environment variable VLLM_NCCL_SO_PATH="),
      fields=("library",), feeds=_FEEDS + " (vLLM's NCCL wrapper loads libnccl)",
      examples=("Found nccl from library libnccl.so.2",)),
    S("pynccl_version", "distributed_init", "info", ("vLLM is using nccl==",), r"nccl==(?P<nccl_version>[\w.+-]+)",
      probe=("vLLM is using nccl==",), fields=("nccl_version",),
      feeds=_FEEDS + " (NCCL communicator being created: ncclCommInitRank)",
      examples=("vLLM is using nccl==2.21.5", "vLLM is using nccl==2.20.5", "vLLM is using nccl==2.28.9")),
    S("p2p_access_cache", "distributed_init", "info", ("GPU P2P access cache",),
      r"(?P<step>generating|reading) GPU P2P access cache (?:for )?(?:in|from) (?P<path>\S+)",
      probe=("generating GPU P2P access cache in", "generating GPU P2P access cache for in",
             "reading GPU P2P access cache from"), fields=("step", "path"),
      feeds=_FEEDS + " (the custom all-reduce tests peer access between the GPUs)",
      examples=("generating GPU P2P access cache in /root/.cache/vllm/gpu_p2p_access_cache_for_0,1.json",
                "generating GPU P2P access cache in /home/luban/.cache/vllm/gpu_p2p_access_cache_for_0,1.json",
                "reading GPU P2P access cache from /home/bigster/.cache/vllm/gpu_p2p_access_cache_for_0,1.json")),
    S("p2p_check_skipped", "distributed_init", "info", ("Skipping P2P check and trusting the driver's P2P report",),
      probe=("Skipping P2P check and trusting the driver's P2P report",),
      feeds=_FEEDS + " (VLLM_SKIP_P2P_CHECK=1: the custom all-reduce trusts the driver's P2P report)",
      examples=("Skipping P2P check and trusting the driver's P2P report.",)),
    S("allreduce_backends", "distributed_init", "info", ("all-reduce backends (in dispatch order)",),
      r"Using \[(?P<backends>[^\]]*)\] all-reduce backends", probe=("all-reduce backends (in dispatch order)",),
      fields=("backends",), quoted=True,  # the backends' names are quoted before the words
      feeds=_FEEDS + " (0.32+: the all-reduce kernels a group will use, CUSTOM first)",
      examples=("Using ['CUSTOM', 'PYNCCL'] all-reduce backends (in dispatch order) for group 'tp:0' out of potential "
                "backends: ['NCCL_SYMM_MEM', 'QUICK_REDUCE', 'FLASHINFER', 'CUSTOM', 'SYMM_MEM', 'PYNCCL'].",)),
    S("parallel_groups_ready", "distributed_ready", "info", ("is assigned as DP rank",),
      r"rank (?P<rank>\d+) in world size (?P<world_size>\d+) is assigned as", probe=("is assigned as DP rank",),
      fields=("rank", "world_size"),
      feeds="comms-hang: communication is up (a hang after this line is not in NCCL set-up)",
      examples=("rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1",
                "rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, EP rank 0, "
                "EPLB rank N/A")),
)  # fmt: skip
