"""Channels to `hopper serve` and its services, called by name from the generated descriptors."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import grpc
import grpc.aio

from .gen import hopper_pb2 as pb

# hopper serve answers gRPC on its one port, over HTTP/2 without TLS for http:// URLs.
_options = [
    ("grpc.max_receive_message_length", 64 << 20),
    ("grpc.max_send_message_length", 64 << 20),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # A server that restarts is reconnected soon, not after grpc's default of up to 2 minutes.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]


def target_of(url: str) -> tuple[str, bool]:
    """target_of is the host:port of url (http:// or https://) and whether it takes TLS."""
    if not isinstance(url, str) or url == "":
        raise ValueError("hopper: url is required (e.g. http://127.0.0.1:7070)")
    u = urlsplit(url if "://" in url else f"http://{url}")
    if u.scheme not in ("http", "https"):
        raise ValueError(f"hopper: url {url!r}: the scheme must be http or https")
    if not u.hostname:
        raise ValueError(f"hopper: url {url!r} has no host")
    tls = u.scheme == "https"
    port = u.port or (443 if tls else 80)
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
    return f"{host}:{port}", tls


def aio_channel(url: str) -> grpc.aio.Channel:
    target, tls = target_of(url)
    if tls:
        return grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(), options=_options)
    return grpc.aio.insecure_channel(target, options=_options)


def sync_channel(url: str) -> grpc.Channel:
    target, tls = target_of(url)
    if tls:
        return grpc.secure_channel(target, grpc.ssl_channel_credentials(), options=_options)
    return grpc.insecure_channel(target, options=_options)


def metadata(api_key: str | None) -> tuple[tuple[str, str], ...]:
    """metadata sends api_key as "authorization: Bearer <key>" with every call, as the TypeScript SDK does."""
    return (("authorization", f"Bearer {api_key}"),) if api_key else ()


class Service:
    """Service calls the methods of one hopper.v1 service on channel (sync or asyncio)."""

    def __init__(self, channel: Any, service: str) -> None:
        desc = pb.DESCRIPTOR.services_by_name[service]
        self._methods: dict[str, Any] = {}
        for m in desc.methods:
            path = f"/{desc.full_name}/{m.name}"
            req = _message_class(m.input_type.name)
            res = _message_class(m.output_type.name)
            if m.client_streaming:
                make = channel.stream_stream if m.server_streaming else channel.stream_unary
            else:
                make = channel.unary_stream if m.server_streaming else channel.unary_unary
            self._methods[m.name] = make(path, request_serializer=req.SerializeToString, response_deserializer=res.FromString)

    def __getitem__(self, method: str) -> Any:
        return self._methods[method]


def _message_class(name: str) -> Any:
    return getattr(pb, name)
