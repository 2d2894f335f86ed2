"""OpenTelemetry spans and duration histograms of rpcs, for the server adapter and the clients.

Optional: the ``otel`` extra installs ``opentelemetry-api`` only; an application that wants the
data installs and configures an SDK (``opentelemetry-sdk``, an exporter) itself. This module
imports ``opentelemetry`` lazily and costs nothing when it is missing or when no provider is
configured:

- not installed: :func:`available` is False (looked up once per process), nothing is recorded;
- installed, but the global tracer and meter providers are still the API's default proxies or
  no-op ones: nothing is started or recorded. Looking the global providers up costs about a
  microsecond each (the API reads the environment), so while both are idle they are looked up
  again at most once a second (:data:`IDLE_RECHECK_SECONDS`): a call then costs one clock
  read, and a provider configured after the app or client was built is picked up within a
  second.

What is recorded, per rpc, on the experimental RPC semantic conventions of OpenTelemetry
(v1.37 and earlier; the newer ``rpc.system.name`` set is still a release candidate):

- a span named ``projectops.v1.OperationsService/<Rpc>`` (the descriptor's service full name and
  method name), kind SERVER (adapter) or CLIENT (client interceptor), with ``rpc.system``,
  ``rpc.service``, ``rpc.method``, ``http.response.status_code`` when a status is known, and,
  when the call failed, ``projectops.error_code`` and ``error.type`` (the code's name);
- a histogram ``rpc.server.duration`` / ``rpc.client.duration`` in milliseconds with the same
  ``rpc.*`` attributes (and the error code of a failed call).

``rpc.system`` is ``"projectops"``: the convention's listed values (grpc, java_rmi, dotnet_wcf,
apache_dubbo, connect_rpc) each name a wire protocol, and this API speaks none of them (its
paths, bodies and error answers are its own, though its code names are Connect's); the
attribute is an open enum, so a system it does not list takes its own name. For the same
reason the error code goes into ``projectops.error_code`` and not ``rpc.connect_rpc.error_code``,
which belongs to ``rpc.system == "connect_rpc"``.

Never recorded: the API key, any header, the request or response body, an error's message (it
may quote a request value). The client's span context travels in a W3C ``traceparent`` header
(the globally configured propagator's headers), which the server extracts, so both spans share
one trace.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from projectops.registry import Operation

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "ERROR_CODE_ATTRIBUTE",
    "IDLE_RECHECK_SECONDS",
    "RPC_SYSTEM",
    "RpcTelemetry",
    "Telemetry",
    "async_client_interceptor",
    "available",
    "client_interceptor",
    "span_name",
]

#: The ``rpc.system`` of every span and measurement (see the module docstring for why).
RPC_SYSTEM = "projectops"
#: The attribute holding the :class:`projectops.Code` of a failed call.
ERROR_CODE_ATTRIBUTE = "projectops.error_code"
_INSTRUMENTATION = "projectops"
#: Seconds between two look-ups of the global providers while neither is configured.
IDLE_RECHECK_SECONDS = 1.0

Side = Literal["server", "client"]

_AVAILABLE: bool | None = None


def available() -> bool:
    """Whether ``opentelemetry-api`` can be imported (looked up once per process)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            importlib.import_module("opentelemetry.trace")
            importlib.import_module("opentelemetry.metrics")
            importlib.import_module("opentelemetry.propagate")
        except ImportError:
            _AVAILABLE = False
        else:
            _AVAILABLE = True
    return _AVAILABLE


def span_name(op: Operation) -> str:
    """``<service full name>/<Rpc>``, e.g. ``projectops.v1.OperationsService/GetReleaseDetails``."""
    return f"{op.method.containing_service.full_name}/{op.method.name}"


class Telemetry:
    """Where the spans and measurements of rpcs go.

    Args:
        tracer_provider: the tracer provider to use; ``None``: the global one
            (``opentelemetry.trace.set_tracer_provider``), looked up at each call.
        meter_provider: the meter provider to use; ``None``: the global one, looked up at each
            call.

    Pass one to ``create_app(..., telemetry=Telemetry(...))`` or to
    :func:`client_interceptor` to record to providers other than the global ones (tests, or an
    app with several pipelines). Without ``opentelemetry-api`` installed it records nothing.
    """

    __slots__ = ("meter_provider", "tracer_provider")

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider

    def __repr__(self) -> str:
        return (
            f"Telemetry(tracer_provider={self.tracer_provider!r}, "
            f"meter_provider={self.meter_provider!r})"
        )


class _Providers:
    """The API's objects, imported once, and the tests that tell a configured provider from
    the API's defaults."""

    def __init__(self) -> None:
        from opentelemetry import context, metrics, propagate, trace

        self.context = context
        self.metrics = metrics
        self.propagate = propagate
        self.trace = trace
        self.idle_tracers: tuple[type, ...] = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
        idle_meters: list[type] = [metrics.NoOpMeterProvider]
        # The API's unset global meter provider is a private class (there is no public
        # ProxyMeterProvider); if a release renames it, measurements go through the proxy,
        # which drops them: still correct, only a little slower.
        internal = importlib.import_module("opentelemetry.metrics._internal")
        proxy = getattr(internal, "_ProxyMeterProvider", None)
        if isinstance(proxy, type):
            idle_meters.append(proxy)
        self.idle_meters = tuple(idle_meters)


_PROVIDERS: _Providers | None = None


def _providers() -> _Providers:
    global _PROVIDERS
    if _PROVIDERS is None:
        _PROVIDERS = _Providers()
    return _PROVIDERS


_T = TypeVar("_T")


class _FromProvider(Generic[_T]):
    """What `make` builds from a provider (a tracer, a histogram), rebuilt only when the
    provider given differs from the last one; ``None`` while the provider is one of `idle`
    (nothing configured), so an idle call does no OpenTelemetry work."""

    __slots__ = ("_idle", "_made", "_make", "_seen")

    def __init__(self, idle: tuple[type, ...], make: Callable[[Any], _T]) -> None:
        self._idle = idle
        self._make = make
        self._seen: object = None
        self._made: _T | None = None

    def of(self, provider: Any) -> _T | None:
        if provider is not self._seen:
            self._seen = provider
            self._made = None if isinstance(provider, self._idle) else self._make(provider)
        return self._made


class RpcTelemetry:
    """The span and histogram of one operation on one side (server or client).

    Built once (at ``create_app`` or when a client interceptor is made), used per call through
    :meth:`start`. Build it only when :func:`available` is True.

    Args:
        op: the operation.
        side: ``"server"`` (SpanKind.SERVER, ``rpc.server.duration``) or ``"client"``
            (SpanKind.CLIENT, ``rpc.client.duration``).
        telemetry: the providers to use; ``None``: the global ones.
    """

    __slots__ = (
        "_api",
        "_attributes",
        "_histogram",
        "_idle_until",
        "_kind",
        "_meter_provider",
        "_metric",
        "_name",
        "_tracer",
        "_tracer_provider",
    )

    def __init__(self, op: Operation, side: Side, telemetry: Telemetry | None = None) -> None:
        self._api = _providers()
        self._name = span_name(op)
        self._attributes: dict[str, str] = {
            "rpc.system": RPC_SYSTEM,
            "rpc.service": op.method.containing_service.full_name,
            "rpc.method": op.method.name,
        }
        kinds = self._api.trace.SpanKind
        self._kind = kinds.SERVER if side == "server" else kinds.CLIENT
        self._metric = f"rpc.{side}.duration"
        self._tracer_provider = None if telemetry is None else telemetry.tracer_provider
        self._meter_provider = None if telemetry is None else telemetry.meter_provider
        self._tracer: _FromProvider[Tracer] = _FromProvider(
            self._api.idle_tracers, lambda p: p.get_tracer(_INSTRUMENTATION, _version())
        )
        self._histogram: _FromProvider[Histogram] = _FromProvider(
            self._api.idle_meters,
            lambda p: p.get_meter(_INSTRUMENTATION, _version()).create_histogram(
                self._metric, unit="ms", description=_DESCRIPTIONS[self._metric]
            ),
        )
        self._idle_until = 0.0

    def _current_tracer(self) -> Tracer | None:
        return self._tracer.of(self._tracer_provider or self._api.trace.get_tracer_provider())

    def _current_histogram(self) -> Histogram | None:
        return self._histogram.of(self._meter_provider or self._api.metrics.get_meter_provider())

    def start(self, carrier: Mapping[str, str] | None = None) -> RpcCall | None:
        """Start recording one call; ``None`` when nothing is configured to record it.

        Args:
            carrier: the request headers of a served call (names in lower case), from which
                the caller's span context is extracted; ``None`` on the client side.

        The span (if any) becomes the current span until :meth:`RpcCall.finish`, which must
        be called in the same thread or task.
        """
        if self._idle_until and time.monotonic() < self._idle_until:
            return None
        tracer = self._current_tracer()
        histogram = self._current_histogram()
        if tracer is None and histogram is None:
            self._idle_until = time.monotonic() + IDLE_RECHECK_SECONDS
            return None
        self._idle_until = 0.0
        return RpcCall(self, tracer, histogram, carrier)


class RpcCall:
    """One call being recorded (see :meth:`RpcTelemetry.start`)."""

    __slots__ = ("_api", "_histogram", "_owner", "_span", "_start", "_token")

    def __init__(
        self,
        owner: RpcTelemetry,
        tracer: Tracer | None,
        histogram: Histogram | None,
        carrier: Mapping[str, str] | None,
    ) -> None:
        self._owner = owner
        self._api = owner._api
        self._histogram = histogram
        self._span: Span | None = None
        self._token: object = None
        if tracer is not None:
            parent = None if carrier is None else self._api.propagate.extract(carrier)
            self._span = tracer.start_span(
                owner._name, context=parent, kind=owner._kind, attributes=owner._attributes
            )
            self._token = self._api.context.attach(
                self._api.trace.set_span_in_context(self._span, parent)
            )
        self._start = time.perf_counter()

    def inject(self, headers: MutableMapping[str, str]) -> None:
        """Add the current span context's headers (``traceparent``, ...) to `headers`; a header
        that `headers` refuses (``ValueError``) is left out, never failing the call."""
        if self._span is None:
            return
        found: dict[str, str] = {}
        self._api.propagate.inject(found)
        for name, value in found.items():
            try:
                headers[name] = value
            except ValueError:
                continue

    def finish(self, status: int | None, code: str | None, failed: bool) -> None:
        """End the call: set the status attributes, end the span, record the duration.

        Args:
            status: the HTTP status of the answer, ``None`` when none is known.
            code: the :class:`projectops.Code` of a failed call, ``None`` on success.
            failed: whether the span's status is ERROR (the server marks only 5xx answers:
                a 4xx is the caller's fault, not the server's; the client marks any failure).
        """
        elapsed_ms = (time.perf_counter() - self._start) * 1000.0
        extra: dict[str, str | int] = {}
        if status is not None:
            extra["http.response.status_code"] = status
        if code is not None:
            extra[ERROR_CODE_ATTRIBUTE] = code
            extra["error.type"] = code
        span = self._span
        if span is not None:
            if extra:
                span.set_attributes(extra)
            if failed:
                # The code only: an error's message may quote a request value.
                span.set_status(self._api.trace.StatusCode.ERROR, code or None)
            span.end()
            self._api.context.detach(self._token)
        if self._histogram is not None:
            measured: dict[str, str | int] = dict(self._owner._attributes)
            if code is not None:
                measured[ERROR_CODE_ATTRIBUTE] = code
            self._histogram.record(elapsed_ms, measured)


_DESCRIPTIONS = {
    "rpc.server.duration": "Duration of inbound RPCs of the Project-Scoped Operations API.",
    "rpc.client.duration": "Duration of outbound RPCs of the Project-Scoped Operations API.",
}


def _version() -> str:
    from projectops import __version__

    return __version__


# --- client interceptors -------------------------------------------------------------------
# Typed loosely (Any) so this core module needs no import of the client layer; the client's
# interceptor types (projectops.client.http.Interceptor, AsyncInterceptor) describe them.


def _client_side(telemetry: Telemetry | None) -> Callable[[Operation], RpcTelemetry | None]:
    cache: dict[str, RpcTelemetry] = {}

    def of(op: Operation) -> RpcTelemetry | None:
        found = cache.get(op.name)
        if found is None:
            found = cache[op.name] = RpcTelemetry(op, "client", telemetry)
        return found

    return of


def _failure(exc: BaseException) -> tuple[int | None, str]:
    code = getattr(exc, "code", None)
    status = getattr(exc, "http_status", None)
    # A failure that is no ApiError (an interceptor's bug, a cancellation) is named by class.
    name = str(code) if code is not None else type(exc).__name__
    return (status if isinstance(status, int) else None), name


def client_interceptor(telemetry: Telemetry | None = None) -> Callable[[Any, Any, Any], Any]:
    """An interceptor of the sync :class:`~projectops.client.Client` that records a CLIENT span
    and ``rpc.client.duration`` per call (retries included) and sends the span context in a
    ``traceparent`` header.

    Usage: ``Client(..., interceptors=[projectops.telemetry.client_interceptor()])``; put it
    first so the span covers the other interceptors too.

    Args:
        telemetry: the providers to use; ``None``: the global ones.

    Returns:
        ``interceptor(request, context, call_next) -> response``. Without
        ``opentelemetry-api`` installed it only calls ``call_next``. The span's
        ``http.response.status_code`` is the failed call's error's ``http_status``, else the
        last answer's status (the context's ``http_status``); unset when no answer came.
    """
    if not available():
        return _passing

    side = _client_side(telemetry)

    def interceptor(request: Any, context: Any, call_next: Any) -> Any:
        call = _client_call(side, context)
        if call is None:
            return call_next(request, context)
        with _finishing(call, context):
            return call_next(request, context)

    return interceptor


def async_client_interceptor(
    telemetry: Telemetry | None = None,
) -> Callable[[Any, Any, Any], Any]:
    """:func:`client_interceptor` for :class:`~projectops.client.AsyncClient`: an ``async def``
    interceptor, otherwise the same."""
    if not available():
        return _async_passing

    side = _client_side(telemetry)

    async def interceptor(request: Any, context: Any, call_next: Any) -> Any:
        call = _client_call(side, context)
        if call is None:
            return await call_next(request, context)
        with _finishing(call, context):
            return await call_next(request, context)

    return interceptor


def _client_call(side: Callable[[Operation], RpcTelemetry | None], context: Any) -> RpcCall | None:
    """The recording of the call of `context` (its trace context put in the call's headers),
    or None when nothing records it."""
    rpc = side(context.operation)
    call = None if rpc is None else rpc.start()
    if call is not None:
        call.inject(context.headers)
    return call


@contextmanager
def _finishing(call: RpcCall, context: Any) -> Iterator[None]:
    """Finish `call` when the block ends: failed with the exception's code and status, if it
    raised one (re-raised), else succeeded; the status is the last answer's (`context`'s
    ``http_status``) where one came."""
    try:
        yield
    except BaseException as exc:
        status, code = _failure(exc)
        # The error's own status first: it is the answer that failed the call.
        call.finish(status if status is not None else _status(context), code, failed=True)
        raise
    call.finish(_status(context), None, failed=False)


def _status(context: Any) -> int | None:
    status = getattr(context, "http_status", None)
    return status if isinstance(status, int) else None


def _passing(request: Any, context: Any, call_next: Any) -> Any:
    return call_next(request, context)


async def _async_passing(request: Any, context: Any, call_next: Any) -> Any:
    return await call_next(request, context)
