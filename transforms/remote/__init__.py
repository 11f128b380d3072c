"""The one remote-call layer every bot, embedder and judge uses: an httpx
AsyncClient per endpoint with explicit timeouts, tenacity retries that honour
Retry-After, an adaptive token-bucket rate limiter (requests/s and tokens/min)
and bounded concurrency, all running on an asyncio loop owned by the worker."""
