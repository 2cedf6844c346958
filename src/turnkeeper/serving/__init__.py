"""Serving: the one place that builds the service `serve`, `worker` and a mounted app run.

`settings` is how a process runs (`Settings`); `server` opens what a process
needs (the store, the tools, the queue, the sweeper, the HTTP app) and runs it;
`mounted` is an assistant as an ASGI app in an application of one's own
(`Assistant.asgi()`). The top floor below the command line: may import
everything but `cli`.
"""
