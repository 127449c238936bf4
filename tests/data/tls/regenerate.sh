#!/usr/bin/env bash
# Regenerates the TLS test certificates in this folder (valid ten years): a CA, a server
# certificate for localhost/127.0.0.1, a client certificate (CN=alice) signed by the CA, and a
# second, unrelated CA whose trust must fail (and a server certificate of it, for reloads).
# Needs the openssl command.
set -euo pipefail
cd "$(dirname "$0")"
q() { "$@" 2>/dev/null; }
q openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 3650 -subj "/CN=Peregrine Test CA"
q openssl req -x509 -newkey rsa:2048 -nodes -keyout wrong-ca-key.pem -out wrong-ca.pem -days 3650 -subj "/CN=Wrong CA"
q openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj "/CN=localhost"
q openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out server.pem -days 3650 \
  -extfile <(printf "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
q openssl req -newkey rsa:2048 -nodes -keyout client-key.pem -out client.csr -subj "/O=Peregrine/CN=alice"
q openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out client.pem -days 3650 \
  -extfile <(printf "extendedKeyUsage=clientAuth\nsubjectAltName=email:alice@example.com,DNS:alice.example.com\n")
# Route certificates (cluster tls): one certificate serves both ends of a route, so both usages.
q openssl req -newkey rsa:2048 -nodes -keyout route-key.pem -out route.csr -subj "/CN=localhost"
q openssl x509 -req -in route.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out route.pem -days 3650 \
  -extfile <(printf "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
# A client certificate from the wrong CA: the server must refuse it.
q openssl req -newkey rsa:2048 -nodes -keyout rogue-key.pem -out rogue.csr -subj "/CN=mallory"
q openssl x509 -req -in rogue.csr -CA wrong-ca.pem -CAkey wrong-ca-key.pem -CAcreateserial -out rogue.pem -days 3650 \
  -extfile <(printf "extendedKeyUsage=clientAuth\n")
# A second server certificate, from the wrong CA: a reload (SIGHUP) switches to it.
q openssl req -newkey rsa:2048 -nodes -keyout server-other-key.pem -out server-other.csr -subj "/CN=localhost"
q openssl x509 -req -in server-other.csr -CA wrong-ca.pem -CAkey wrong-ca-key.pem -CAcreateserial -out server-other.pem \
  -days 3650 -extfile <(printf "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
rm -f ./*.csr ./*.srl wrong-ca-key.pem
