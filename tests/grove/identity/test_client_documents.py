"""Client ID metadata documents that cannot be used: the consent page says why.

The documents are served by a local HTTPS server (a certificate made for the test). The
toolkit's fetcher refuses loopback and private addresses — so the refused-address case
goes through Grove's fetcher exactly as configured, and the others through Grove's
fetcher over a transport that reaches this one local server (`LoopbackTransport`: the
toolkit's own reading of the answer — status, media type, size, JSON — behind a
connection to 127.0.0.1 with the test's certificate trusted)."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from django.conf import settings
from django.test import Client, override_settings
from oauth2_provider.cimd import SafeMetadataFetcher, _validate_client_id_url
from oauth2_provider.models import Application

from grove.identity.client_metadata import ClientDocumentFetcher
from grove.models import Account
from tests.grove.identity.oauth_helpers import REDIRECT, new_flow

pytestmark = pytest.mark.django_db


def _certificate(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


class DocumentServer:
    """HTTPS on 127.0.0.1: each path answers (status, content type, body)."""

    def __init__(self, folder: Path) -> None:
        self.answers: dict[str, tuple[int, str, bytes]] = {}
        self.cert, key = _certificate(folder)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                status, kind, body = outer.answers.get(self.path,
                                                       (404, "text/plain", b"not here"))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"

    def document(self, path: str, **fields: Any) -> str:
        """A valid document at `path` (fields replace or, as None, remove its own)."""
        url = self.url(path)
        body = {"client_id": url, "client_name": "Local agent", "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], **fields}
        self.answers[path] = (200, "application/json", json.dumps(
            {k: v for k, v in body.items() if v is not None}).encode())
        return url


class LoopbackTransport(SafeMetadataFetcher):
    """The toolkit's fetcher, connecting to the test's own server (which it would refuse:
    a loopback address) with the test's certificate trusted."""

    ca_file = ""

    def fetch(self, client_id: str) -> tuple[dict, int]:
        parsed = _validate_client_id_url(client_id)
        pool = urllib3.HTTPSConnectionPool(
            host="127.0.0.1", port=parsed.port, retries=False, timeout=5,
            ssl_context=ssl.create_default_context(cafile=self.ca_file),
            server_hostname=parsed.hostname)
        response = pool.urlopen("GET", parsed.path, headers={"Host": parsed.netloc},
                                redirect=False, preload_content=False)
        try:
            return self._read_document(response)
        finally:
            response.release_conn()
            pool.close()


class LoopbackFetcher(ClientDocumentFetcher):
    transport = LoopbackTransport


@pytest.fixture
def documents(tmp_path) -> Iterator[DocumentServer]:
    server = DocumentServer(tmp_path)
    LoopbackTransport.ca_file = str(server.cert)
    yield server
    server.server.shutdown()


@pytest.fixture
def owner_web() -> Client:
    client = Client()
    client.force_login(Account.objects.create_user(username="owner",
                                                   password="a long enough passphrase 42"))
    return client


def _consent_page(owner_web: Client, client_id: str) -> tuple[int, str]:
    page = owner_web.get(new_flow(client_id).authorize_query())
    return page.status_code, page.content.decode()


LOOPBACK = "tests.grove.identity.test_client_documents.LoopbackFetcher"


def test_a_document_at_a_loopback_address_is_refused_and_the_page_says_so(documents,
                                                                         owner_web):
    """Grove's fetcher as configured: the document is there, but at an address Grove
    does not fetch from."""
    for host in ("127.0.0.1", "localhost"):
        url = documents.url(f"/{host}.json", host)
        documents.answers[f"/{host}.json"] = (200, "application/json", json.dumps({
            "client_id": url, "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none"}).encode())
        status, page = _consent_page(owner_web, url)
        assert status == 400
        assert 'data-code="invalid_client"' in page
        assert f"client ID metadata document ({url})" in page
        assert "resolves to a non-public address (127.0.0.1)" in page \
            or "resolves to a non-public address (::1)" in page, page
        # Asked again while the toolkit waits before fetching it again: the same reason.
        assert "non-public address" in _consent_page(owner_web, url)[1]
    assert not Application.objects.exists()


def _reason(documents: DocumentServer, owner_web: Client, url: str) -> str:
    with override_settings(OAUTH2_PROVIDER={**settings.OAUTH2_PROVIDER,
                                            "CIMD_METADATA_FETCHER": LOOPBACK}):
        status, page = _consent_page(owner_web, url)
    assert status == 400, page
    assert f"client ID metadata document ({url})" in page
    return page


def test_each_reason_a_document_cannot_be_used_is_said(documents, owner_web):
    documents.answers["/teapot.json"] = (418, "application/json", b"{}")
    documents.answers["/page.json"] = (200, "text/html", b"<p>hello</p>")
    documents.answers["/broken.json"] = (200, "application/json", b'{"client_id": ')
    documents.answers["/huge.json"] = (200, "application/json",
                                       b'{"pad": "' + b"x" * 20_000 + b'"}')
    other = documents.url("/someone-else.json")
    cases = {
        documents.url("/missing.json"): "returned HTTP 404",
        documents.url("/teapot.json"): "returned HTTP 418",
        documents.url("/page.json"): "is not JSON (Content-Type: &#x27;text/html&#x27;)",
        documents.url("/broken.json"): "is not valid JSON",
        documents.url("/huge.json"): "exceeds the maximum allowed size",
        documents.document("/wrong.json", client_id=other):
            f"the document&#x27;s client_id is &#x27;{other}&#x27;, not the address it "
            "was fetched from",
        documents.document("/secret.json", token_endpoint_auth_method="client_secret_basic"):
            "its token_endpoint_auth_method must be none, not &#x27;client_secret_basic",
        documents.document("/desktop.json", application_type="desktop"):
            "application_type is web or native",
        documents.document("/password.json", grant_types=["password"]):
            "Grove offers the grant types authorization_code, refresh_token only, not password",
        documents.document("/nowhere.json", redirect_uris=None):
            "redirect_uris must be a non-empty list",
    }
    said = {url: _reason(documents, owner_web, url) for url in cases}
    for url, expected in cases.items():
        assert expected in said[url], (url, said[url])
    # Each cause has its own message: no two pages say the same thing.
    assert len({page for page in said.values()}) == len(cases)
    assert not Application.objects.exists()


def test_a_good_document_through_the_same_transport_names_the_client(documents, owner_web):
    url = documents.document("/good.json", application_type="native")
    with override_settings(OAUTH2_PROVIDER={**settings.OAUTH2_PROVIDER,
                                            "CIMD_METADATA_FETCHER": LOOPBACK}):
        status, page = _consent_page(owner_web, url)
    assert status == 200, page
    assert "Connect “Local agent” to Grove?" in page
    assert Application.objects.get(client_id=url).client_type == Application.CLIENT_PUBLIC
