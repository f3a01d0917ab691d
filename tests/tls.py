"""A throw-away certificate authority for the TLS tests, made with the real ``openssl`` command.

``make_pki(folder)`` writes a CA, a server certificate for ``localhost`` / ``127.0.0.1`` and two
client certificates (``prometheus`` and ``intruder``, both signed by the CA) and returns their paths.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PKI:
    ca: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    client_cert: Path  # SAN DNS:prometheus.monitoring.svc
    client_key: Path
    other_cert: Path  # SAN DNS:intruder.example
    other_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    tool = shutil.which("openssl")
    assert tool, "openssl is not installed (scripts/install-system-deps installs it)"
    subprocess.run([tool, *args], cwd=cwd, check=True, capture_output=True)


def _leaf(folder: Path, name: str, subject: str, san: str, usage: str) -> tuple[Path, Path]:
    key, csr, cert, ext = (folder / f"{name}{s}" for s in (".key", ".csr", ".crt", ".ext"))
    ext.write_text(f"subjectAltName={san}\nextendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n")
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(csr),
        "-subj",
        subject,
        cwd=folder,
    )
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", str(cert), "-days", "2", "-sha256", "-extfile", str(ext), cwd=folder,
    )  # fmt: skip
    return cert, key


def make_pki(folder: Path) -> PKI:
    folder.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", "/CN=fairwatch test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=folder,
    )  # fmt: skip
    server = _leaf(folder, "server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", "serverAuth")
    client = _leaf(folder, "client", "/CN=prometheus", "DNS:prometheus.monitoring.svc", "clientAuth")
    other = _leaf(folder, "other", "/CN=intruder", "DNS:intruder.example", "clientAuth")
    return PKI(folder / "ca.crt", folder / "ca.key", *server, *client, *other)
