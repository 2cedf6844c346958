"""Observing: what a turn tells whoever watches it while it runs.

Prices, reports, the watchers (`watched` values, `watchers`, `metrics`,
`telemetry`) and log output. Imports only the ground floor (`turnkeeper.errors`,
`wire`, `usage`, `outcomes`, `credentials`), so the loop, the job and the store's
callers can load it without loading each other.
"""
