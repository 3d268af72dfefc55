//! `zk-harness [--nodes N] [--force-sync] [--proxy] [--secure] [--tick-ms MS] [--no-tick-line]
//! [--min-session-timeout-ms MS]`: starts a real ZooKeeper
//! (standalone, or an ensemble of N) for test suites in any language. Prints `servers=<connect
//! string>` on stdout once it serves (and with --proxy, `proxy=<addr>`: a fault proxy in front
//! of server 1; with --secure, a standalone server with a TLS port and SASL users, the lines of
//! `Secured::describe`: `tls_servers=`, `tls_wrong_host_servers=`, `tls_ca=`, `tls_wrong_ca=`,
//! `tls_cert=`, `tls_key=`, `sasl_users=user:password,...`), then
//! obeys commands on stdin, one per line, answering `ok` or `error: ...`:
//!   blackhole | heal | cut | refuse | delay MS | drop-next-reply   (the proxy; see Proxy)
//!   count                                     (prints `bytes=N connections=M`: what clients
//!                                              sent through the proxy so far, then `ok`)
//!   stop I | restart I | pause I | resume I   (I is 1-based) | restart-all
//!   leader                                    (prints the leader's 1-based index)
//!   mntr I                                    (prints the server's mntr, then `end`)
//! End of input or `quit` stops every server and removes its data.

use std::io::{BufRead, Write};

use zklock_testkit::{Config, Proxy, Secured, ZooKeeper};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut nodes = 1;
    let mut with_proxy = false;
    let mut config = Config::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--nodes" => {
                nodes = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--force-sync" => config.force_sync = true,
            "--tick-ms" => {
                config.tick_ms = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            // ZooKeeper's built-in tick, 3 s (issue 53).
            "--no-tick-line" => config.tick_line = false,
            "--min-session-timeout-ms" => {
                config.min_session_timeout_ms = Some(
                    it.next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| usage()),
                )
            }
            "--proxy" => with_proxy = true,
            "--secure" => config.secure = true,
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    let started = if config.secure {
        Secured::start().map(|s| (s.describe(), s.zk))
    } else {
        ZooKeeper::start(nodes, &config).map(|zk| (String::new(), zk))
    };
    let (secure_lines, mut zk) = match started {
        Ok(started) => started,
        Err(e) => {
            eprintln!("zk-harness: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout();
    writeln!(out, "servers={}", zk.connect_string()).ok();
    write!(out, "{secure_lines}").ok();
    let proxy = if with_proxy {
        match Proxy::start(&zk.address(0)) {
            Ok(p) => {
                writeln!(out, "proxy={}", p.addr()).ok();
                Some(p)
            }
            Err(e) => {
                eprintln!("zk-harness: cannot start the proxy: {e}");
                std::process::exit(1);
            }
        }
    } else {
        None
    };
    out.flush().ok();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let member = |w: Option<&&str>| -> Option<usize> {
            w.and_then(|s| s.parse::<usize>().ok())
                .filter(|&i| i >= 1 && i <= zk.len())
                .map(|i| i - 1)
        };
        let reply = match (words.first().copied(), member(words.get(1))) {
            (Some("quit"), _) => break,
            (Some("stop"), Some(i)) => {
                zk.stop(i);
                Ok(String::new())
            }
            (Some("restart"), Some(i)) => zk.restart(i).map(|_| String::new()),
            (Some("restart-all"), _) => zk.restart_all().map(|_| String::new()),
            (Some("pause"), Some(i)) => {
                zk.pause(i);
                Ok(String::new())
            }
            (Some("resume"), Some(i)) => {
                zk.resume(i);
                Ok(String::new())
            }
            (
                Some(
                    cmd @ ("blackhole" | "heal" | "cut" | "refuse" | "drop-next-reply" | "delay"
                    | "count"),
                ),
                _,
            ) => match &proxy {
                None => Err("no proxy (start with --proxy)".to_string()),
                Some(p) if cmd == "count" => Ok(format!(
                    "bytes={} connections={}\n",
                    p.bytes_from_clients(),
                    p.connections_accepted()
                )),
                Some(p) => {
                    match cmd {
                        "blackhole" => p.blackhole(),
                        "heal" => p.heal(),
                        "cut" => p.cut(),
                        "refuse" => p.refuse(),
                        "drop-next-reply" => p.drop_next_reply(),
                        _ => p.delay(words.get(1).and_then(|w| w.parse().ok()).unwrap_or(0)),
                    }
                    Ok(String::new())
                }
            },
            (Some("leader"), _) => zk
                .leader()
                .map(|i| format!("{}\n", i + 1))
                .ok_or_else(|| "no leader".to_string()),
            (Some("mntr"), Some(i)) => zk.four_letter(i, "mntr").map(|m| format!("{m}end\n")),
            (None, _) => continue,
            _ => Err(format!("unknown command {line:?}")),
        };
        match reply {
            Ok(text) => writeln!(out, "{text}ok").ok(),
            Err(e) => writeln!(out, "error: {e}").ok(),
        };
        out.flush().ok();
    }
    drop(proxy);
    drop(zk);
}

fn usage() -> ! {
    eprintln!("usage: zk-harness [--nodes N] [--force-sync] [--proxy] [--secure] [--tick-ms MS] [--no-tick-line] [--min-session-timeout-ms MS]  (stdin: stop|restart|pause|resume I, restart-all, leader, mntr I, blackhole, heal, cut, refuse, delay MS, drop-next-reply, count, quit)");
    std::process::exit(2);
}
