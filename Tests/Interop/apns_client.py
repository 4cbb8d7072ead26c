#!/usr/bin/env python3
"""Send ONE push with a real third-party Python APNs library and print ONE JSON line.

Run it with the interop venv's python (deploy/interop-venv.sh creates it):

    .build/interop-venv/bin/python Tests/Interop/apns_client.py --library aioapns \
        --host 127.0.0.1 --port 2197 --ca certs/ca.pem --auth token \
        --key-file certs/apns-key.p8 --key-id ROUSEKEY01 --team-id ROUSETEAM1 \
        --topic com.example.rouse.voip --push-type voip --device-token <64 hex>

Output (stdout, exactly one line) describes what the LIBRARY surfaced to its caller -- fields are
read from the library's own result / exception objects, never from HTTP parsed here:
    {"library":"aioapns","version":"4.0","auth":"token","ok":true,"status":200,"apns_id":"...",
     "reason":null,"timestamp":null}
Exit status: 0 accepted, 1 rejected by the server (reason printed), 2 any other error
({"ok":false,"error":"<ExceptionType>: <message>"}), 3 option the library cannot do
({"ok":false,"unsupported":"..."}). Library log output and warnings go to stderr.

How each library is pointed at an arbitrary host:port (both hard-code Apple's hosts on 443).
Line numbers refer to the versions pinned in Tests/Interop/requirements.txt.

aioapns 4.0
  * Host/port: class attributes of the HTTP/2 protocol class. aioapns/connection.py:148 and :322/:326
    (APNS_SERVER = "api.push.apple.com" / "api.development.push.apple.com"), :311 (APNS_PORT = 443).
    The pool picks the class in APNsBaseConnectionPool.__init__ (connection.py:341-345, stored in
    `pool.protocol_class`) and connects with loop.create_connection(host=protocol_class.APNS_SERVER,
    port=protocol_class.APNS_PORT, ssl=self.ssl_context) (connection.py:521-526 cert, :579-584 token).
    We set `client.pool.protocol_class` to a per-run subclass with APNS_SERVER/APNS_PORT overridden;
    nothing global is patched. Side effects: APNS_SERVER is also the TLS SNI / hostname checked
    against the server certificate (asyncio uses `host` as server_hostname) and is sent as a plain
    `host` header (connection.py:184) -- aioapns sends NO `:authority` pseudo-header, and the
    `host` value carries no port.
  * TLS: ssl.create_default_context() unless an ssl_context is passed (connection.py:491, :553); it
    never calls set_alpn_protocols (no "alpn" anywhere in the package), so the ClientHello offers
    NO ALPN, and H2Protocol.connection_made (connection.py:90-93) writes the HTTP/2 preface right
    away: HTTP/2 with prior knowledge over TLS. A server that requires ALPN "h2" breaks it.
    We do not pass an ssl_context: the trust root goes in via SSL_CERT_FILE, which
    ssl.create_default_context() -> set_default_verify_paths() honours, so the library builds its
    TLS exactly as it does in production.
  * Cert auth: supported. APNs(client_cert=PATH) -> ssl_context.load_cert_chain(PATH)
    (connection.py:495), i.e. ONE PEM holding certificate and private key; we concatenate
    --cert-file and --key-file into a temporary file.
  * Result: NotificationResult(notification_id, status (str), description=reason, timestamp)
    (common.py:54-71). Responses are matched to requests by the apns-id response header
    (connection.py:255-258, :268) but errors by stream (:278-283): if the response's apns-id
    differs from the request's (e.g. a server-generated id after BadMessageId), :283 raises
    KeyError inside data_received, asyncio drops the connection, and the send never completes
    (the driver's --timeout reports it).
    Connection failures retry max_connection_attempts=5 times and end in MaxAttemptsExceeded.

kalyke-apns 1.5.0
  * Host/port: the `_base_url` property (kalyke/clients/__init__.py:38-43, returns
    "https://api.sandbox.push.apple.com" or "https://api.push.apple.com"), used by _make_url
    (:48-49). The clients are frozen dataclasses, so we subclass the client class with `_base_url`
    overridden to "https://HOST:PORT"; nothing global is patched.
  * TLS: kalyke builds httpx2.AsyncClient(headers=..., http2=True) per send (clients/apns.py:22)
    with default verify, i.e. httpcore2.default_ssl_context() which honours SSL_CERT_FILE
    (httpcore2/_ssl.py:20-22). httpcore2 offers ALPN ["h2", "http/1.1"]
    (httpcore2/_async/connection.py:133-134) and uses HTTP/2 only if the server selects "h2"
    (:79-80), otherwise it falls back to HTTP/1.1. kalyke 1.5 depends on httpx2 (pydantic's
    fork), not httpx. Sends `:authority` with the port, `user-agent: python-httpx2/<v> <topic>`
    and always an `apns-expiration` (now + 30 days, models/apns_config.py:17).
  * Cert auth: only VoIPCertificateClient (clients/voip_certificate.py, deprecated, VoIP pushes
    only): context.load_cert_chain(certfile=auth_key_filepath, keyfile=key_filepath) (:45-51).
    Cert auth with another push type -> "unsupported" (exit 3).
  * Token auth: the JWT claims are {"iss": team, "iat": str(int(now))} -- iat is a JSON STRING,
    not a NumericDate (clients/apns.py:27-31; unchanged since 2022, kalyke commit 4b600ac). A server
    that insists on an integer iat answers 403 InvalidProviderToken to every kalyke token push.
    VoIPClient + VoIPApnsConfig for voip (topic must end in ".voip",
    models/apns_config.py:54-60), ApnsClient + ApnsConfig otherwise.
  * Result: send_message returns the response apns-id header on 2xx, else raises the exception
    class named after the JSON "reason" with the rest of the JSON in `.error`
    (clients/__init__.py:33-36, :54-59). The HTTP status is NOT surfaced -> "status": null. An
    unknown reason becomes AttributeError (getattr on kalyke.exceptions).

pyapns-client 2.0.6
  * Host/port: APNSClient.__init__ keeps `self._base_url = self.BASE_URLS[mode]`
    (pyapns_client/client.py:15-18, :28); we subclass with BASE_URLS mapping both modes to
    "https://HOST:PORT"; nothing global is patched.
  * TLS: httpx.Client(verify=root_cert_path, http2=True, base_url=...) (client.py:134): the
    library's own `root_cert_path` argument takes our trust root.
  * Token auth only (no certificate auth -> "unsupported", exit 3). The JWT claims are
    {"iss": team, "iat": time.time()} (client.py:107-108) signed by PyJWT: iat is a FRACTIONAL
    number such as 1767225600.123456, which APNs accepts.
  * Result: push() returns None on 200; a rejection raises <Reason>Exception carrying
    status_code, apns_id and (410) timestamp (client.py:77-92). apns-id is not surfaced on success.
  * Expiration: IOSNotification(expiration=...) is sent as given (notification.py:233-234).

apns2-up 0.9.0 (a maintained fork of PyAPNs2 on hyper-up)
  * Host/port: APNsClient.SANDBOX_SERVER / DEFAULT_PORT class attributes (apns2/client.py:42-45,
    :68-71); we subclass with both overridden.
  * TLS: hyper's init_context() trusts hyper's bundled CA file (hyper/tls.py:24, :100); a caller
    with a private CA loads it into the context: CertificateCredentials builds the context
    (apns2/credentials.py:36-40), we add load_verify_locations(CA); TokenCredentials has no context
    argument, so we set the base class's (name-mangled) `_Credentials__ssl_context` to
    init_context(cert_path=CA) -- the one non-API step.
  * Token auth: claims {"iss": team, "iat": time.time()} (credentials.py:79-83), PyJWT:
    a FRACTIONAL iat. Certificate auth: CertificateCredentials(cert_file=ONE PEM with both).
  * Result: get_notification_result() returns 'Success', a reason, or (reason, timestamp) for
    410 (client.py:151-165). Neither the HTTP status nor the apns-id is surfaced; apns-id cannot be set.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import json
import logging
import os
import signal
import sys
import tempfile
import warnings

EXIT_ACCEPTED, EXIT_REJECTED, EXIT_ERROR, EXIT_UNSUPPORTED = 0, 1, 2, 3

_ARGS: argparse.Namespace | None = None


def emit(obj: dict, code: int) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    sys.exit(code)


def base_fields(library: str) -> dict:
    dist = {"aioapns": "aioapns", "kalyke": "kalyke-apns", "pyapns_client": "pyapns-client",
            "apns2": "apns2-up"}[library]
    try:
        version = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"library": library, "version": version, "auth": _ARGS.auth if _ARGS else None}


class Unsupported(Exception):
    pass


class LogTail(logging.Handler):
    """Keeps the library's WARNING+ log lines, attached to error output (diagnosis only)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self.lines.append(f"{record.name}: {record.getMessage()}")


# --------------------------------------------------------------------------------------------
# aioapns
# --------------------------------------------------------------------------------------------


async def send_aioapns(args: argparse.Namespace, payload: dict, tmpdir: str) -> dict:
    from aioapns import APNs, NotificationRequest, PushType

    kwargs: dict = {"topic": args.topic}
    if args.auth == "token":
        with open(args.key_file, encoding="utf-8") as f:
            kwargs.update(key=f.read(), key_id=args.key_id, team_id=args.team_id)
    else:
        combined = os.path.join(tmpdir, "client.pem")
        with open(combined, "w", encoding="utf-8") as out:
            for part in (args.cert_file, args.key_file):
                with open(part, encoding="utf-8") as f:
                    text = f.read()
                out.write(text if text.endswith("\n") else text + "\n")
        kwargs["client_cert"] = combined

    client = APNs(**kwargs)
    # Host/port override: see the module docstring (aioapns/connection.py:148, :311, :341-345).
    base = client.pool.protocol_class
    client.pool.protocol_class = type(
        "RouseInterop" + base.__name__, (base,), {"APNS_SERVER": args.host, "APNS_PORT": args.port}
    )

    request = NotificationRequest(
        device_token=args.device_token,
        message=payload,
        notification_id=args.apns_id,
        priority=args.priority,
        push_type=PushType(args.push_type),
        **({} if args.time_to_live is None else {"time_to_live": args.time_to_live}),
    )
    try:
        result = await client.send_notification(request)
    finally:
        client.pool.close()

    status = result.status
    with contextlib.suppress(TypeError, ValueError):
        status = int(status)
    out = base_fields("aioapns")
    out.update(
        ok=bool(result.is_successful),
        status=status,
        apns_id=result.notification_id,
        reason=result.description,
        timestamp=result.timestamp,
    )
    return out


# --------------------------------------------------------------------------------------------
# kalyke
# --------------------------------------------------------------------------------------------


def _routed(cls, base_url: str):
    # Host/port override: see the module docstring (kalyke/clients/__init__.py:38-43).
    return type("RouseInterop" + cls.__name__, (cls,), {"_base_url": property(lambda self: base_url)})


async def send_kalyke(args: argparse.Namespace, payload: dict, tmpdir: str) -> dict:
    import kalyke
    from kalyke import exceptions as kexc

    host = f"[{args.host}]" if ":" in args.host else args.host
    base_url = f"https://{host}:{args.port}"
    config_kwargs: dict = {"topic": args.topic}
    if args.apns_id is not None:
        config_kwargs["identifier"] = args.apns_id
    if args.priority is not None:
        config_kwargs["priority"] = kalyke.ApnsPriority(args.priority)
    if args.time_to_live is not None:
        config_kwargs["expiration"] = _expiration(args)

    if args.auth == "cert":
        if args.push_type != "voip":
            raise Unsupported(
                "kalyke-apns supports certificate auth only through VoIPCertificateClient "
                "(VoIP pushes only); token auth is required for push type " + args.push_type
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            client = _routed(kalyke.VoIPCertificateClient, base_url)(
                use_sandbox=True, auth_key_filepath=args.cert_file, key_filepath=args.key_file
            )
        config = kalyke.VoIPApnsConfig(**config_kwargs)
    elif args.push_type == "voip":
        client = _routed(kalyke.VoIPClient, base_url)(
            use_sandbox=True, team_id=args.team_id, auth_key_id=args.key_id,
            auth_key_filepath=args.key_file,
        )
        config = kalyke.VoIPApnsConfig(**config_kwargs)
    else:
        client = _routed(kalyke.ApnsClient, base_url)(
            use_sandbox=True, team_id=args.team_id, auth_key_id=args.key_id,
            auth_key_filepath=args.key_file,
        )
        config = kalyke.ApnsConfig(push_type=kalyke.ApnsPushType(args.push_type), **config_kwargs)

    out = base_fields("kalyke")
    try:
        apns_id = await client.send_message(device_token=args.device_token, payload=payload, apns_config=config)
    except kexc.ApnsProviderException as e:
        error = e.error if isinstance(e.error, dict) else {}
        out.update(ok=False, status=None, apns_id=None, reason=type(e).__name__,
                   timestamp=error.get("timestamp"))
        return out
    out.update(ok=True, status=None, apns_id=apns_id, reason=None, timestamp=None)
    return out


# --------------------------------------------------------------------------------------------
# pyapns-client
# --------------------------------------------------------------------------------------------


def _expiration(args: argparse.Namespace) -> int | None:
    """An absolute apns-expiration for --time-to-live, as a user of a library without one computes it."""
    import time

    return None if args.time_to_live is None else int(time.time()) + args.time_to_live


async def send_pyapns_client(args: argparse.Namespace, payload: dict, tmpdir: str) -> dict:
    if args.auth == "cert":
        raise Unsupported("pyapns-client supports token auth only")
    import pyapns_client
    from pyapns_client import exceptions as pexc

    host = f"[{args.host}]" if ":" in args.host else args.host
    base_url = f"https://{host}:{args.port}"
    # Host/port override: see the module docstring (pyapns_client/client.py:15-18, :28).
    routed = type("RouseInteropAPNSClient", (pyapns_client.APNSClient,),
                  {"BASE_URLS": {"prod": base_url, "dev": base_url}})
    client = routed(mode="dev", root_cert_path=args.ca, auth_key_path=args.key_file,
                    auth_key_id=args.key_id, team_id=args.team_id)
    expiration = _expiration(args)
    notification = pyapns_client.IOSNotification(
        payload=pyapns_client.IOSPayload(custom=payload), topic=args.topic, apns_id=args.apns_id,
        priority=None if args.priority is None else str(args.priority), push_type=args.push_type,
        expiration=None if expiration is None else str(expiration))
    out = base_fields("pyapns_client")
    try:
        await asyncio.to_thread(client.push, notification=notification, device_token=args.device_token)
    except pexc.APNSException as e:
        reason = type(e).__name__.removesuffix("Exception")
        if reason in ("APNSServer", "APNSConnection", "APNSDevice", "APNSProgramming", "APNS"):
            raise
        out.update(ok=False, status=getattr(e, "status_code", None), apns_id=getattr(e, "apns_id", None),
                   reason=reason, timestamp=getattr(e, "timestamp", None))
        return out
    finally:
        client.close()
    out.update(ok=True, status=None, apns_id=None, reason=None, timestamp=None)
    return out


# --------------------------------------------------------------------------------------------
# apns2-up
# --------------------------------------------------------------------------------------------


async def send_apns2(args: argparse.Namespace, payload: dict, tmpdir: str) -> dict:
    if args.apns_id is not None:
        raise Unsupported("apns2-up cannot set apns-id")
    from apns2.client import APNsClient, NotificationPriority, NotificationType
    from apns2.credentials import CertificateCredentials, TokenCredentials
    from apns2.payload import Payload
    from hyper.tls import init_context

    if args.auth == "token":
        credentials = TokenCredentials(auth_key_path=args.key_file, auth_key_id=args.key_id, team_id=args.team_id)
        # The one non-API step: TokenCredentials takes no TLS context (see the module docstring).
        credentials._Credentials__ssl_context = init_context(cert_path=args.ca)
    else:
        combined = os.path.join(tmpdir, "client.pem")
        with open(combined, "w", encoding="utf-8") as out_file:
            for part in (args.cert_file, args.key_file):
                with open(part, encoding="utf-8") as f:
                    text = f.read()
                out_file.write(text if text.endswith("\n") else text + "\n")
        credentials = CertificateCredentials(cert_file=combined)
        credentials._Credentials__ssl_context.load_verify_locations(cafile=args.ca)
    routed = type("RouseInteropAPNsClient", (APNsClient,),
                  {"SANDBOX_SERVER": args.host, "LIVE_SERVER": args.host, "DEFAULT_PORT": args.port})
    aps = payload.get("aps", {})
    custom = {k: v for k, v in payload.items() if k != "aps"}
    body = Payload(alert=aps.get("alert"), custom=custom or None,
                   content_available=bool(aps.get("content-available")))
    priority = NotificationPriority.Delayed if args.priority == 5 else NotificationPriority.Immediate

    def send():
        client = routed(credentials=credentials, use_sandbox=True)
        stream = client.send_notification_async(
            args.device_token, body, topic=args.topic, priority=priority, expiration=_expiration(args),
            push_type=NotificationType(args.push_type))
        return client.get_notification_result(stream)

    result = await asyncio.to_thread(send)
    out = base_fields("apns2")
    if result == "Success":
        out.update(ok=True, status=None, apns_id=None, reason=None, timestamp=None)
    elif isinstance(result, tuple):
        out.update(ok=False, status=None, apns_id=None, reason=result[0], timestamp=result[1])
    else:
        out.update(ok=False, status=None, apns_id=None, reason=result, timestamp=None)
    return out


# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--library", required=True, choices=["aioapns", "kalyke", "pyapns_client", "apns2"])
    p.add_argument("--host", required=True)
    p.add_argument("--port", required=True, type=int)
    p.add_argument("--ca", help="trust root PEM (exported as SSL_CERT_FILE)")
    p.add_argument("--auth", required=True, choices=["token", "cert"])
    p.add_argument("--key-file", help="token: .p8 signing key; cert: client private key PEM")
    p.add_argument("--key-id")
    p.add_argument("--team-id")
    p.add_argument("--cert-file", help="cert: client certificate PEM")
    p.add_argument("--topic", required=True)
    p.add_argument("--device-token", required=True)
    p.add_argument("--push-type", default="voip", choices=["voip", "background", "alert"])
    p.add_argument("--payload", default='{"aps":{}}', help="JSON object")
    p.add_argument("--priority", type=int, choices=[1, 5, 10])
    p.add_argument("--apns-id")
    p.add_argument("--time-to-live", type=int,
                   help="seconds the push may be stored, asked of the library as its users do "
                        "(aioapns time_to_live; the others: apns-expiration = now + N)")
    p.add_argument("--timeout", type=float, default=20.0, help="overall time limit, seconds")
    p.add_argument("--verbose", action="store_true", help="library debug logging on stderr")
    args = p.parse_args(argv)
    if args.auth == "token" and not (args.key_file and args.key_id and args.team_id):
        p.error("--auth token needs --key-file, --key-id and --team-id")
    if args.auth == "cert" and not (args.cert_file and args.key_file):
        p.error("--auth cert needs --cert-file and --key-file")
    return args


async def run(args: argparse.Namespace, payload: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="rouse-interop-") as tmpdir:
        sender = {"aioapns": send_aioapns, "kalyke": send_kalyke, "pyapns_client": send_pyapns_client,
                  "apns2": send_apns2}[args.library]
        return await asyncio.wait_for(sender(args, payload, tmpdir), timeout=args.timeout)


def main(argv: list[str]) -> None:
    global _ARGS
    args = _ARGS = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(name)s %(levelname)s %(message)s")
    tail = LogTail()
    logging.getLogger().addHandler(tail)
    warnings.simplefilter("default")
    if args.ca:
        os.environ["SSL_CERT_FILE"] = os.path.abspath(args.ca)
        os.environ.pop("SSL_CERT_DIR", None)

    def hard_timeout(_signum, _frame):
        out = base_fields(args.library)
        out.update(ok=False, error=f"TimeoutError: hard limit of {args.timeout + 5:g}s reached")
        sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
        sys.stdout.flush()
        os._exit(EXIT_ERROR)

    signal.signal(signal.SIGALRM, hard_timeout)
    signal.alarm(int(args.timeout) + 5)

    try:
        payload = json.loads(args.payload)
        if not isinstance(payload, dict):
            raise ValueError("--payload must be a JSON object")
        out = asyncio.run(run(args, payload))
    except Unsupported as e:
        out = base_fields(args.library)
        out.update(ok=False, unsupported=str(e))
        emit(out, EXIT_UNSUPPORTED)
    except (asyncio.TimeoutError, TimeoutError):
        out = base_fields(args.library)
        out.update(ok=False, error=f"TimeoutError: no result from {args.library} within {args.timeout:g}s")
        if tail.lines:
            out["library_log"] = tail.lines[-10:]
        emit(out, EXIT_ERROR)
    except Exception as e:  # noqa: BLE001 -- anything else is an "error" by contract
        out = base_fields(args.library)
        out.update(ok=False, error=f"{type(e).__name__}: {e}")
        if tail.lines:
            out["library_log"] = tail.lines[-10:]
        emit(out, EXIT_ERROR)
    emit(out, EXIT_ACCEPTED if out.get("ok") else EXIT_REJECTED)


if __name__ == "__main__":
    main(sys.argv[1:])
