#!/usr/bin/env python3
"""A WebPush application server and user agent's keys for the gateway's WebPush tests.

    webpush_app.py keys STATE                         make the UA's keys (p256dh, auth) and a VAPID key; print
                                                      the VAPID public key (base64url, for the subscription)
    webpush_app.py send STATE ENDPOINT CAFILE SIZE SEED [--ttl N] [--urgency U] [--topic T] [--no-vapid]
                       [--aud ORIGIN] [--exp-in SECONDS]
                                                      encrypt SIZE pseudo-random bytes (seeded) with aes128gcm and
                                                      POST them with pywebpush (requests: HTTP/1.1, VAPID); print
                                                      {"status":…, "headers":{…}, "plaintext":"<base64>"}
                                                      --aud/--exp-in sign the VAPID JWT with py_vapid with these
                                                      claims (pywebpush would replace a past exp with its own)
    webpush_app.py decrypt STATE BASE64               decrypt a body with http_ece; print the plaintext, base64

pywebpush raises on any status above 202; the exception's response is reported the same way.
"""
import base64
import json
import random
import sys
import time

import http_ece
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pywebpush import WebPushException, webpush


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def load(state_path):
    with open(state_path) as f:
        return json.load(f)


def cmd_keys(state_path):
    ua = ec.generate_private_key(ec.SECP256R1())
    vapid = ec.generate_private_key(ec.SECP256R1())
    state = {
        "ua_private": ua.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode(),
        "p256dh": b64u(ua.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)),
        "auth": b64u(random.SystemRandom().randbytes(16)),
        "vapid_pem": state_path + ".vapid.pem",
        "vapid_public": b64u(vapid.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)),
    }
    with open(state["vapid_pem"], "wb") as f:
        f.write(vapid.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
    with open(state_path, "w") as f:
        json.dump(state, f)
    print(state["vapid_public"])


def cmd_send(state_path, endpoint, cafile, size, seed, options):
    state = load(state_path)
    plaintext = random.Random(int(seed)).randbytes(int(size))
    session = requests.Session()
    session.trust_env = False  # REQUESTS_CA_BUNDLE would replace the test CA
    session.verify = cafile
    headers = {}
    if "--urgency" in options:
        headers["Urgency"] = options[options.index("--urgency") + 1]
    if "--topic" in options:
        headers["Topic"] = options[options.index("--topic") + 1]
    ttl = int(options[options.index("--ttl") + 1]) if "--ttl" in options else 60
    vapid = {} if "--no-vapid" in options else {
        "vapid_private_key": state["vapid_pem"], "vapid_claims": {"sub": "mailto:test@example.com"}}
    if "--aud" in options or "--exp-in" in options:
        from urllib.parse import urlparse
        from py_vapid import Vapid02
        url = urlparse(endpoint)
        claims = {
            "sub": "mailto:test@example.com",
            "aud": options[options.index("--aud") + 1] if "--aud" in options else f"{url.scheme}://{url.netloc}",
            "exp": int(time.time()) + (int(options[options.index("--exp-in") + 1]) if "--exp-in" in options else 3600),
        }
        headers.update(Vapid02.from_file(state["vapid_pem"]).sign(claims))
        vapid = {}
    subscription = {"endpoint": endpoint, "keys": {"p256dh": state["p256dh"], "auth": state["auth"]}}
    try:
        response = webpush(subscription, data=plaintext, content_encoding="aes128gcm", ttl=ttl, headers=headers,
                           requests_session=session, timeout=20, **vapid)
    except WebPushException as error:
        response = error.response
        if response is None:
            raise
    print(json.dumps({
        "status": response.status_code,
        "headers": {k.lower(): v for k, v in response.headers.items()},
        "plaintext": base64.b64encode(plaintext).decode(),
        "body": response.text,
        "http": response.raw.version if response.raw is not None else 0,
    }))


def cmd_decrypt(state_path, body_b64):
    state = load(state_path)
    private = serialization.load_pem_private_key(state["ua_private"].encode(), password=None)
    auth = base64.urlsafe_b64decode(state["auth"] + "==")
    plaintext = http_ece.decrypt(base64.b64decode(body_b64), private_key=private, auth_secret=auth,
                                 version="aes128gcm")
    print(base64.b64encode(plaintext).decode())


def main(argv):
    if len(argv) >= 3 and argv[1] == "keys":
        return cmd_keys(argv[2])
    if len(argv) >= 7 and argv[1] == "send":
        return cmd_send(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7:])
    if len(argv) == 4 and argv[1] == "decrypt":
        return cmd_decrypt(argv[2], argv[3])
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
