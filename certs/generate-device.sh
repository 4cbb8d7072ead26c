#!/usr/bin/env bash
# Generates the device client certificates of the test PKI, only those that are missing (existing files are
# never regenerated): device.pem/.key (CN=rouse-device-1, signed by ca.pem) and device-unknown-ca.pem/.key
# (CN=rouse-device-2, signed by unknown-ca.pem, trusted by nothing). EC P-256, EKU clientAuth, 10 years.
# Test material only: the keys are committed.
set -euo pipefail
cd "$(dirname "$0")"

make_device() { # name cn ca-prefix
    local name=$1 cn=$2 ca=$3
    if [ -f "$name.pem" ] && [ -f "$name.key" ]; then
        return
    fi
    local work
    work=$(mktemp -d)
    openssl ecparam -name prime256v1 -genkey -noout -out "$work/key.pem"
    openssl pkcs8 -topk8 -nocrypt -in "$work/key.pem" -out "$work/$name.key"
    openssl req -new -key "$work/$name.key" -subj "/O=Rouse Test Devices/CN=$cn" -out "$work/req.csr"
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n' >"$work/ext.cnf"
    openssl x509 -req -in "$work/req.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial -CAserial "$work/ca.srl" \
        -days 3650 -sha256 -extfile "$work/ext.cnf" -out "$work/$name.pem" 2>/dev/null
    install -m 0644 "$work/$name.pem" "$name.pem"
    install -m 0600 "$work/$name.key" "$name.key"
    rm -rf "$work"
    echo "generated $name.pem (CN=$cn, issuer $ca.pem)"
}

make_device device rouse-device-1 ca
make_device device-unknown-ca rouse-device-2 unknown-ca
openssl verify -CAfile ca.pem device.pem >/dev/null
if openssl verify -CAfile ca.pem device-unknown-ca.pem >/dev/null 2>&1; then
    echo "device-unknown-ca.pem must not verify against ca.pem" >&2
    exit 1
fi
