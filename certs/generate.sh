#!/usr/bin/env bash
# Regenerates the Rouse test PKI into this directory (certs/). TEST MATERIAL ONLY: every private key
# written here is public, committed to git, and must never protect anything real.
#
# Usage: certs/generate.sh            (idempotent: replaces every generated file, same names each time)
# Needs: bash, openssl (3.x). See certs/README.md for what each file is for.
set -euo pipefail

OUT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUNDLE="com.example.rouse"
TEAM="ROUSETEAM1"
P12_PASSWORD="rouse-test"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

# --- openssl configuration: CA database, policies and every extension profile used below -------------
cat >openssl.cnf <<CNF
[ca]
default_ca = ca_rouse

[ca_rouse]
dir = $WORK
database = \$dir/index.txt
new_certs_dir = \$dir/newcerts
serial = \$dir/serial
default_md = sha256
policy = policy_any
unique_subject = no
copy_extensions = none
email_in_dn = no

[policy_any]
commonName = supplied

[req]
distinguished_name = req_dn
prompt = no
[req_dn]
CN = unused

[v3_ca]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[v3_server]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

# Apple-style provider certificates. Topics: 1.2.840.113635.100.6.3.6 is a SEQUENCE alternating
# UTF8String topic and SEQUENCE { UTF8String kind }. Environments: .3.1 development (sandbox),
# .3.2 production, each with DER value NULL.
[v3_provider_both]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.3.1 = ASN1:NULL
1.2.840.113635.100.6.3.2 = ASN1:NULL
1.2.840.113635.100.6.3.6 = ASN1:SEQUENCE:apns_topics

[v3_provider_sandbox]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.3.1 = ASN1:NULL
1.2.840.113635.100.6.3.6 = ASN1:SEQUENCE:apns_topics

[v3_provider_production]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.3.2 = ASN1:NULL
1.2.840.113635.100.6.3.6 = ASN1:SEQUENCE:apns_topics

[apns_topics]
topic1 = UTF8String:$BUNDLE
kind1 = SEQUENCE:kind_app
topic2 = UTF8String:$BUNDLE.voip
kind2 = SEQUENCE:kind_voip
topic3 = UTF8String:$BUNDLE.complication
kind3 = SEQUENCE:kind_complication
[kind_app]
kind = UTF8String:app
[kind_voip]
kind = UTF8String:voip
[kind_complication]
kind = UTF8String:complication
CNF

reset_db() {
    rm -rf index.txt index.txt.* serial serial.* newcerts
    mkdir newcerts
    : >index.txt
}

# new_ca NAME SUBJECT: self-signed CA, EC P-256, 20 years.
new_ca() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null
    openssl req -new -x509 -config openssl.cnf -key "$1.key" -subj "$2" -days 7305 -sha256 \
        -extensions v3_ca -out "$1.pem"
}

# sign CA_NAME CSR OUT EXTENSIONS [START END]: issue a certificate with `openssl ca`; the optional
# dates (YYYYMMDDHHMMSSZ) are how the expired certificate gets a validity window in the past.
sign() {
    local ca="$1" csr="$2" out="$3" ext="$4"
    local dates=(-days 3650)
    if [[ $# -ge 6 ]]; then dates=(-startdate "$5" -enddate "$6"); fi
    reset_db
    openssl ca -batch -config openssl.cnf -cert "$ca.pem" -keyfile "$ca.key" -in "$csr" -out "$out" \
        -extensions "$ext" -preserveDN -notext -rand_serial "${dates[@]}" 2>/dev/null
}

# provider NAME EXTENSIONS CA [START END]: RSA 2048 key (as Apple issues) and a certificate whose
# subject is UID=<bundle>, CN=Apple Push Services: <bundle>, OU=<team>, O=..., C=US.
provider() {
    local name="$1" ext="$2" ca="$3"
    shift 3
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$name.key" 2>/dev/null
    openssl req -new -config openssl.cnf -key "$name.key" \
        -subj "/UID=$BUNDLE/CN=Apple Push Services: $BUNDLE/OU=$TEAM/O=Rouse Test Provider/C=US" \
        -out "$name.csr"
    sign "$ca" "$name.csr" "$name.pem" "$ext" "$@"
}

# --- the PKI --------------------------------------------------------------------------------------------
new_ca ca "/CN=Rouse Test CA/O=Rouse Test/C=US"
new_ca unknown-ca "/CN=Rouse Untrusted Test CA/O=Rouse Test Elsewhere/C=US"

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out server.key 2>/dev/null
openssl req -new -config openssl.cnf -key server.key -subj "/CN=localhost/O=Rouse Test/C=US" -out server.csr
sign ca server.csr server.pem v3_server
cat server.pem ca.pem >server-chain.pem

provider provider v3_provider_both ca
provider provider-sandbox v3_provider_sandbox ca
provider provider-production v3_provider_production ca
provider provider-expired v3_provider_both ca 20200101000000Z 20210101000000Z
provider provider-unknown-ca v3_provider_both unknown-ca

for name in provider provider-sandbox provider-production; do
    openssl pkcs12 -export -in "$name.pem" -inkey "$name.key" -name "Apple Push Services: $BUNDLE" \
        -passout "pass:$P12_PASSWORD" -keypbe AES-256-CBC -certpbe AES-256-CBC -macalg sha256 -out "$name.p12"
done

# --- ES256 token-auth keys (.p8 = PKCS#8 PEM, prime256v1) ------------------------------------------------
# file                      key id     team id    bundle its topics belong to
KEYS=(
    "apns-key.p8 ROUSEKEY01 ROUSETEAM1 $BUNDLE"
    "apns-key-other-team.p8 ROUSEKEY02 ROUSETEAM2 com.example.other"
    "apns-key-same-team.p8 ROUSEKEY03 ROUSETEAM1 $BUNDLE"
)
{
    echo '{'
    echo '  "bundleID": "'"$BUNDLE"'",'
    echo '  "providerTeamID": "'"$TEAM"'",'
    echo '  "p12Password": "'"$P12_PASSWORD"'",'
    echo '  "keys": ['
    n=0
    for entry in "${KEYS[@]}"; do
        read -r file kid team bundle <<<"$entry"
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$file" 2>/dev/null
        openssl pkey -in "$file" -pubout -out "${file%.p8}.pub.pem"
        n=$((n + 1))
        sep=","
        [[ $n -eq ${#KEYS[@]} ]] && sep=""
        printf '    {"file": "%s", "publicKey": "%s", "keyID": "%s", "teamID": "%s",\n' \
            "$file" "${file%.p8}.pub.pem" "$kid" "$team"
        printf '     "topics": ["%s", "%s.voip", "%s.complication"]}%s\n' "$bundle" "$bundle" "$bundle" "$sep"
    done
    echo '  ]'
    echo '}'
} >keys.json

# --- install into certs/ ---------------------------------------------------------------------------------
FILES=(
    ca.pem ca.key unknown-ca.pem unknown-ca.key
    server.pem server.key server-chain.pem
    provider.pem provider.key provider.p12
    provider-sandbox.pem provider-sandbox.key provider-sandbox.p12
    provider-production.pem provider-production.key provider-production.p12
    provider-expired.pem provider-expired.key
    provider-unknown-ca.pem provider-unknown-ca.key
    apns-key.p8 apns-key.pub.pem apns-key-same-team.p8 apns-key-same-team.pub.pem
    apns-key-other-team.p8 apns-key-other-team.pub.pem
    keys.json
)
for f in "${FILES[@]}"; do
    install -m 0644 "$f" "$OUT/$f"
done

# --- self-check -----------------------------------------------------------------------------------------
cd "$OUT"
openssl verify -CAfile ca.pem server.pem provider.pem provider-sandbox.pem provider-production.pem >/dev/null
if openssl verify -CAfile ca.pem provider-unknown-ca.pem >/dev/null 2>&1; then
    echo "generate.sh: provider-unknown-ca.pem must not verify against ca.pem" >&2
    exit 1
fi
if openssl x509 -in provider-expired.pem -noout -checkend 0 >/dev/null; then
    echo "generate.sh: provider-expired.pem is not expired" >&2
    exit 1
fi
openssl pkcs12 -in provider.p12 -passin "pass:$P12_PASSWORD" -nokeys -noout
echo "generate.sh: wrote ${#FILES[@]} files into $OUT"
