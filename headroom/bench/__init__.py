"""The load ramp and its report: workload, client, per-step statistics, the knee, the
comparison table across runs. It uses the supervisor's journal only to record a result.

`ramp.run_bench` drives an OpenAI-compatible server one concurrency step at a time;
`workload` makes the requests, `client` sends them, `stats` summarises each step,
`sampling` reads the server's own metrics during a step, `knee` finds where throughput
stops growing, `report` and `compare` print the results, `journal` records them.
"""
