"""Secure ZooKeeper: TLS, SASL, ACLs and chroot against one secured server (`zk-harness --secure`)."""

from __future__ import annotations

import time
import uuid

import pytest

import zklock
from conftest import Harness

FAST = 6.0  # seconds: a configuration error must not cost the 15 s connect timeout


def path() -> str:
    return f"/zklock-py-secure/{uuid.uuid4().hex}"


def password(secure: Harness, user: str) -> str:
    return dict(u.split(":", 1) for u in secure.info["sasl_users"].split(","))[user]


def test_a_tls_client_with_a_client_certificate_acquires_and_releases(secure: Harness) -> None:
    i = secure.info
    with zklock.Client(
        i["tls_servers"], tls_ca=i["tls_ca"], tls_cert=i["tls_cert"], tls_key=i["tls_key"]
    ) as client:
        with client.lock(path()) as lease:
            assert lease.token > 0 and lease.state == "held"
        assert lease.state == "released"


@pytest.mark.parametrize(
    "hosts_key, options, words",
    [
        ("tls_servers", {"tls_ca": "tls_wrong_ca"}, "wrong CA"),
        ("tls_servers", {}, "speaks TLS"),
        ("tls_wrong_host_servers", {"tls_ca": "tls_ca"}, "wrong host"),
    ],
    ids=["wrong-ca", "plaintext-on-tls-port", "wrong-host"],
)
def test_a_bad_tls_setup_fails_fast_with_connection_failed_saying_which(
    secure: Harness, hosts_key: str, options: dict, words: str  # type: ignore[type-arg]
) -> None:
    kwargs = {k: secure.info[v] for k, v in options.items()}
    start = time.monotonic()
    with pytest.raises(zklock.ConnectionFailed, match=words):
        zklock.Client(secure.info[hosts_key], **kwargs)
    assert time.monotonic() - start < FAST


def test_a_wrong_sasl_password_raises_permission_denied_without_showing_it(secure: Harness) -> None:
    with pytest.raises(zklock.PermissionDenied) as caught:
        zklock.Client(secure.info["servers"], sasl_user="alice", sasl_password="pw-never-shown-1")
    assert "alice" in str(caught.value)
    assert "pw-never-shown-1" not in repr(caught.value) + str(caught.value)


def test_creator_all_keeps_another_user_out_and_another_session_of_ours_in(secure: Harness) -> None:
    i, p = secure.info, path()
    alice = {"sasl_user": "alice", "sasl_password": password(secure, "alice"), "acl": "creator-all"}
    with zklock.Client(i["tls_servers"], tls_ca=i["tls_ca"], **alice) as ours, zklock.Client(
        i["servers"], auth="bob:bob-digest", acl="creator-all"
    ) as bob, zklock.Client(i["servers"], **alice) as ours_too:
        with ours.lock(p):
            with pytest.raises(zklock.PermissionDenied):
                bob.lock(p).acquire(blocking=False)
            with pytest.raises(zklock.PermissionDenied):
                bob.lock(p).participants()
            assert ours_too.lock(p).acquire(blocking=False) is False
            assert len(ours_too.lock(p).participants()) == 1


def test_read_anyone_creator_all_lets_another_user_list_but_not_join(secure: Harness) -> None:
    i, p = secure.info, path()
    with zklock.Client(
        i["servers"], auth="carol:carol-digest", acl="read-anyone-creator-all"
    ) as ours, zklock.Client(
        i["servers"], sasl_user="bob", sasl_password=password(secure, "bob")
    ) as bob:
        with ours.lock(p) as lease:
            assert [n.node for n in bob.lock(p).participants()] == [lease.path]
            with pytest.raises(zklock.PermissionDenied):
                bob.lock(p).acquire(blocking=False)


def test_lock_paths_are_relative_to_the_chroot(secure: Harness) -> None:
    i, root = secure.info, path()
    with zklock.Client(i["servers"]) as plain:
        # the chroot must exist: a lock held at <root>/base makes it (and is released at once)
        with plain.lock(f"{root}/base"):
            with zklock.Client(i["tls_servers"] + root, tls_ca=i["tls_ca"]) as chrooted:
                with chrooted.lock("/app/orders") as lease:
                    assert lease.path.startswith("/app/orders/_c_")
                    seen = plain.lock(f"{root}/app/orders").participants()
                    assert [n.node for n in seen] == [root + lease.path]


def test_secrets_never_show_in_repr_or_errors(secure: Harness) -> None:
    with zklock.Client(
        secure.info["servers"],
        auth="dave:digest-pw-2",
        sasl_user="alice",
        sasl_password=password(secure, "alice"),
    ) as client:
        shown = repr(client) + str(vars(client))
        assert "digest-pw-2" not in shown and password(secure, "alice") not in shown
    with pytest.raises(zklock.InvalidArgument) as caught:
        zklock.Client(secure.info["servers"], auth="no-colon-secret")
    assert "no-colon-secret" not in str(caught.value)
