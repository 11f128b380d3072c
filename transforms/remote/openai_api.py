"""OpenAI-compatible adapters: chat completions and embeddings.

Works with OpenAI, vLLM, Ollama's /v1, LiteLLM (base_url ends in /v1) and
Azure OpenAI (set `api_version`; base_url is the resource URL, the model is
the deployment name, the key goes in the `api-key` header).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from transforms.remote.client import CallRecord, EndpointClient

DEFAULT_MAX_TOKENS_ESTIMATE = 512  # completion tokens assumed before the call


def estimate_tokens(text: str) -> int:
    """~4 characters a token: good enough to pace a tokens/minute budget."""
    return len(text) // 4 + 1


def embeddings_path(client: EndpointClient, model: str) -> str:
    return _path(client, model, "embeddings")


def _path(client: EndpointClient, model: str, op: str) -> str:
    if client.cfg.api_version:
        return f"/openai/deployments/{model}/{op}"
    return f"/{op}"


@dataclass(slots=True)
class ChatReply:
    texts: list[str]                      # one per choice
    message_extras: list[dict[str, Any]] = field(default_factory=list)  # e.g. reasoning_content
    record: CallRecord | None = None
    error: str | None = None


async def chat(client: EndpointClient, model: str, messages: Sequence[dict[str, str]], *,
               purpose: str, temperature: float = 0.0, max_tokens: int | None = None,
               n: int = 1, extra: dict[str, Any] | None = None,
               cache_salt: str | None = None) -> ChatReply:
    """One chat completion; cache_salt (judge calls only) lets the call cache answer it."""
    body: dict[str, Any] = {"model": model, "messages": list(messages), "temperature": temperature}
    if max_tokens:
        body["max_tokens"] = max_tokens
    if n > 1:
        body["n"] = n
    body.update(extra or {})
    est = sum(estimate_tokens(m.get("content", "")) for m in messages) + \
        (max_tokens or DEFAULT_MAX_TOKENS_ESTIMATE) * n
    result = await client.post_json(_path(client, model, "chat/completions"), body, model=model,
                                    purpose=purpose, estimated_tokens=est, cache_salt=cache_salt)
    if result.data is None:
        return ChatReply([], record=result.record, error=result.record.error)
    try:
        texts, extras = [], []
        for choice in result.data["choices"]:
            message = choice["message"]
            texts.append(message.get("content") or "")
            extras.append({k: v for k, v in message.items() if k not in ("role", "content")})
    except (KeyError, TypeError) as exc:
        result.record.ok = False
        result.record.error = f"unexpected chat response shape (missing {exc})"
        return ChatReply([], record=result.record, error=result.record.error)
    return ChatReply(texts, extras, result.record)


async def embeddings(client: EndpointClient, model: str, texts: Sequence[str], *,
                     purpose: str = "embeddings") -> tuple[list[list[float]] | None, CallRecord]:
    est = sum(estimate_tokens(t) for t in texts)
    result = await client.post_json(_path(client, model, "embeddings"),
                                    {"model": model, "input": list(texts)}, model=model,
                                    purpose=purpose, estimated_tokens=est)
    if result.data is None:
        return None, result.record
    try:
        rows = sorted(result.data["data"], key=lambda d: d["index"])
        vectors = [list(map(float, d["embedding"])) for d in rows]
        if len(vectors) != len(texts):
            raise ValueError(f"{len(vectors)} vectors for {len(texts)} texts")
    except (KeyError, TypeError, ValueError) as exc:
        result.record.ok = False
        result.record.error = f"unexpected embeddings response: {exc}"
        return None, result.record
    return vectors, result.record
