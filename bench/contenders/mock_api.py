"""An in-process Messages API: an `httpx2.MockTransport` serving the fake model's bodies.

Both wire contenders (the anthropic SDK's tool runner and turnkeeper's
Anthropic adapter) talk to it through a real `AsyncAnthropic` client, so they
pay the same serialisation, HTTP client and response parsing costs. The
server answers by a per-turn counter (turns on one client run one at a time)
so that it never parses the growing request.
"""

from __future__ import annotations

import json

import httpx2
from anthropic import AsyncAnthropic

from .. import fake

BASE_URL = "http://mock-api.invalid"
KEY = "bench-not-a-key"


class MockMessagesApi:
    def __init__(self, spec: fake.Spec) -> None:
        self.spec = spec
        self.bodies = [json.dumps(b).encode() for b in fake.script(spec)]
        self.step = 0

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path.endswith("/v1/messages"), request.url
        await fake.called(self.spec)
        body = self.bodies[self.step]
        self.step += 1
        headers = {"content-type": "application/json", "request-id": f"req_{self.step}"}
        return httpx2.Response(200, content=body, headers=headers)

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self.handle)

    def client(self) -> AsyncAnthropic:
        """A plain SDK client over the mock, as an application using the SDK builds one."""
        return AsyncAnthropic(
            api_key=KEY,
            base_url=BASE_URL,
            http_client=httpx2.AsyncClient(transport=self.transport()),
            max_retries=0,
        )
