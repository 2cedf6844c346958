"""turnkeeper's benchmarks, side by side with the peers.

`python -m bench` runs every workload and writes `bench/RESULTS.md`. The
machine is noisy, so every contender runs in its own worker process and the
contenders take turns in short slices; a workload reports the median of the
per-round ratios against a baseline measured in the same rounds.

- `fake`: the one fake model (Messages API bodies) and the one trivial tool.
- `contenders/`: one module per runtime, each turning the fake into a turn.
- `workloads/`: one module per workload; `workloads.ALL` lists them in order.
- `method`: worker processes, alternating slices, medians of ratios.
- `worker`: the worker process side.
- `machine`: what the run ran on.
- `local_server`: the HTTP server the fake APIs (`cache_api`, `window_api`) and the
  tests' fake models run on.
"""
