"""The order in which the doctor ranks findings of equal severity: by rule id prefix.

Data, kept apart from headroom.doctor.steps (which ranks with it and checks a fix against the
other steps) so that the list can grow with the rules without growing the logic around it.
An id matches the first prefix it starts with; an id in no prefix ranks after all of them.
"""

from __future__ import annotations

# Start-up order of vLLM: config checks, the memory gate, weight loading, profiling, KV sizing.
ID_ORDER = (
    "unrecognized-arguments",
    # the person's words say which change made the failure go away (rules_words_fix)
    "words-stated-fix",
    "tp-heads-not-divisible",
    # heads the GPUs do not divide, said in words (rules_words): a layout error, like the above
    "words-heads-over-gpus",
    # the other sizes vLLM checks or splits before loading weights (rules_quant_tp,
    # rules_parallel_split, rules_parallel_sizes)
    "quantized-tp-split",
    "vision-heads-split-fixed",
    "pp-partition-invalid",
    "ep-without-moe",
    "ep-required",
    "eplb-experts-uneven",
    "dp-exceeds-gpus",
    # the weights alone not fitting outranks an OOM that also lists other processes: stopping
    # them would not make the model fit
    "cuda-oom-weights",
    # an OOM said on one GPU of several (rules_words): the lowest TP, before the generic OOM
    "words-one-gpu-of-several",
    "words-one-gpu-used",
    "predicted-no-kv-memory",
    "world-size-too-large",
    "pp-unsupported",
    "free-memory-below-utilization",
    "memory-gate",
    "foreign-process",
    "cuda-oom-foreign-process",
    # the host's page cache holding a unified-memory GPU's memory (rules_sm12x)
    "unified-memory-page-cache",
    "shm-full",
    "nccl-error",
    "nccl-watchdog-timeout",
    # the failed allocation has the size of one knob's tensor (oom_allocation): that knob
    # before a release default that only might have sized the profile
    "cuda-oom-allocation",
    # a bare OOM whose memory account leaves no KV cache for one request (rules_oom): after
    # the allocation that says where it was
    "cuda-oom-no-kv-room",
    # a default the user never set sized the start-up profile: before the generic KV / OOM
    # answers, after every cause those rules find on their own (weights, other processes)
    # an OOM the sizes tie to a long max_model_len (rules_long_context) says by how much; the
    # words' own blame on the length (rules_words_fix) only which way: both before a release
    # default that only might have sized the profile
    "cuda-oom-long-context",
    "words-length-blamed",
    "release-default-max-num-seqs",
    "release-default-changed",
    # the same OOM when only vLLM's default says the length (no command line): a condition,
    # after the causes the input does say (a release default that changed, stated)
    "cuda-oom-if-long-context",
    "no-cache-memory",
    # the person's own words name the cause (rules_words): before the generic answers to a
    # symptom said in words, which do not know what the rest of the sentence says
    # HF's device_map / max_memory named for vLLM (rules_words_sizing): TP splits instead
    "words-hf-placement",
    "words-low-utilization",
    "words-works-with",
    "words-graph-capture",
    "cuda-oom",
    "max-seq-len-exceeds-kv",
    # a length the words ask GPUs for (rules_words_sizing): more GPUs, before the shorter
    # length the prediction offers when nobody asked for one
    "words-length-needs-gpus",
    "predicted-max-seq-len-exceeds-kv",
    "nvlink-down",
    "ecc",
    "kv-full-preemptions",
    "queue-growing-kv-full",
    "ttft-rising-waiting",
    "tp-across-nodes",
    "tp-over-slow-links",
    "pp-bubbles",
    "pp-inside-fast-node",
    "kv-capacity-thin",
)
