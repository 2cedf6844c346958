"""The turn: the loop, its decisions, tool rounds, the model call, approvals and resume.

Owns one turn from its question to its end: `loop.run_turn` calls the model
(`model_call`), runs the tools it asks for (`tool_round`), waits for a person
(`approvals`), picks a crashed turn up again (`resume`), tells the world what
happens (`hooks`, `activity`), and is kept as a file (`trace`) that `replay` runs
again. May import the ground floor (`turnkeeper.errors`,
`wire`, `usage`, `outcomes`, `state`, `budget`, `cards`, `credentials`, `i18n`),
`store` (its records; `lifecycle` also its protocol, to end a turn from the store),
`providers`, `tools` and `observe`; never `service`, `api` or `cli`.
"""
