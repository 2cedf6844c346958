"""The service: turns as queued jobs, tried once, and the processes that run them.

Owns the job (`job`), the embedded and distributed queues (`queue`, `worker`),
and the leases and the sweeper that finalises a turn whose worker stopped
(`leases`, `sweeper`). May import everything below it (`turn`, `store`,
`observe`, `providers`, `tools`, the ground floor); never the assistant, the
HTTP layer or `serving`.
"""
