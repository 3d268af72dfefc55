//! zkbench: the benchmarks of issue 8.
//!
//! `zkbench orchestrate [--modes nosync|fsync|both] [--secs S] [--scenarios s1,s3] --out FILE
//!   --java-cp CP --kazoo-python PY --bench-dir DIR [--python-face PY] [--node-face DIR]
//!   --zkc-worker BIN [--c-face BIN] [--skip "key=why"]...` runs everything (see `run.sh`);
//! `zkbench worker --impl zklock|raw --scenario sN ...` is one Rust worker process;
//! `zkbench serve [--force-sync]` runs a server for trying workers by hand;
//! `zkbench plot RESULTS.json OUT.svg` draws the picture of a run (`results/latest.svg`).

mod common;
mod orchestrate;
mod plot;
mod rust_worker;
mod s9;

use orchestrate::Impl;

fn main() {
    let mut argv = std::env::args().skip(1);
    let cmd = argv.next().unwrap_or_default();
    let raw: Vec<String> = argv.collect();
    let args = common::Args::parse(raw.clone().into_iter());
    match cmd.as_str() {
        "worker" => match rust_worker::run(&args) {
            Ok(v) => println!("{v}"),
            Err(e) => {
                eprintln!("zkbench worker: {e}");
                std::process::exit(1);
            }
        },
        "orchestrate" => {
            let (impls, skipped) = match implementations(&args, &raw) {
                Ok(found) => found,
                Err(e) => {
                    eprintln!("zkbench: {e}");
                    std::process::exit(1);
                }
            };
            match orchestrate::run(&args, impls, skipped) {
                Ok(results) => {
                    let out = args.opt("out").unwrap_or_else(|| "results.json".into());
                    if let Some(dir) = std::path::Path::new(&out).parent() {
                        std::fs::create_dir_all(dir).ok();
                    }
                    let text = serde_json::to_string_pretty(&results).unwrap_or_default();
                    if let Err(e) = std::fs::write(&out, text) {
                        eprintln!("zkbench: cannot write {out}: {e}");
                        std::process::exit(1);
                    }
                    println!("\nresults written to {out}");
                    // The picture beside the JSON: the cost curve and the targets.
                    let svg = std::path::Path::new(&out).with_file_name("latest.svg");
                    match std::fs::write(&svg, plot::svg(&results)) {
                        Ok(()) => println!("picture written to {}", svg.display()),
                        Err(e) => eprintln!("zkbench: cannot write {}: {e}", svg.display()),
                    }
                }
                Err(e) => {
                    eprintln!("zkbench: {e}");
                    std::process::exit(1);
                }
            }
        }
        "plot" => {
            // `zkbench plot RESULTS.json OUT.svg`: draws the picture of an earlier run again.
            let (Some(input), Some(output)) = (raw.first(), raw.get(1)) else {
                eprintln!("usage: zkbench plot RESULTS.json OUT.svg");
                std::process::exit(2);
            };
            let results = std::fs::read_to_string(input)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
            match results
                .and_then(|r| std::fs::write(output, plot::svg(&r)).map_err(|e| e.to_string()))
            {
                Ok(()) => println!("picture written to {output}"),
                Err(e) => {
                    eprintln!("zkbench plot {input}: {e}");
                    std::process::exit(1);
                }
            }
        }
        "serve" => {
            // A server for running workers by hand: prints `servers=...`, stops at end of input.
            // `--members 3 --tick-ms 500`: an ensemble at another tick (the s9 timings).
            let config = zklock_testkit::Config {
                force_sync: args.opt("force-sync").is_some(),
                tick_ms: args.int("tick-ms", 200) as u32,
                secure: false,
                ..zklock_testkit::Config::default()
            };
            match zklock_testkit::ZooKeeper::start(args.int("members", 1) as usize, &config) {
                Ok(zk) => {
                    println!("servers={}", zk.connect_string());
                    let mut sink = String::new();
                    while std::io::stdin()
                        .read_line(&mut sink)
                        .map(|n| n > 0)
                        .unwrap_or(false)
                    {
                        sink.clear();
                    }
                }
                Err(e) => {
                    eprintln!("zkbench: {e}");
                    std::process::exit(1);
                }
            }
        }
        _ => {
            eprintln!("usage: zkbench orchestrate ... | zkbench worker ... (see bench/run.sh)");
            std::process::exit(2);
        }
    }
}

type Found = (Vec<Impl>, Vec<(String, String)>);

fn implementations(args: &common::Args, raw: &[String]) -> Result<Found, String> {
    let me = std::env::current_exe()
        .expect("own path")
        .display()
        .to_string();
    let bench_dir = args.opt("bench-dir").unwrap_or_else(|| "bench".into());
    let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut impls = vec![
        Impl {
            key: "zklock".into(),
            label: "zklock Rust core (async)".into(),
            cmd: v(&[&me, "worker", "--impl", "zklock"]),
            scenarios: vec![
                "s1", "s2", "s3", "s4", "s5", "s6", "s6wait", "s7", "s8", "s9", "curve",
            ],
            startup: 0.5,
            warmup: 1.0,
        },
        Impl {
            key: "zklock-blocking".into(),
            label: "zklock Rust core (blocking_*)".into(),
            cmd: v(&[&me, "worker", "--impl", "zklock", "--api", "blocking"]),
            scenarios: vec!["s1", "s2"],
            startup: 0.5,
            warmup: 1.0,
        },
        // Scenario 1 over TLS (the server's TLS port, Netty), beside `zklock` in the same
        // slots: the TLS overhead of the uncontended cycle. Only when asked for (--impls): the
        // server then runs with a TLS port (Netty) for every implementation.
        Impl {
            key: "zklock-tls".into(),
            label: "zklock Rust core over TLS".into(),
            cmd: v(&[&me, "worker", "--impl", "zklock", "--tls", "yes"]),
            scenarios: vec!["s1"],
            startup: 0.5,
            warmup: 1.0,
        },
        Impl {
            key: "raw".into(),
            label: "raw limit (zookeeper-client)".into(),
            cmd: v(&[&me, "worker", "--impl", "raw"]),
            scenarios: vec!["s1", "s4"],
            startup: 0.5,
            warmup: 1.0,
        },
    ];
    // The second limit (issue 24, point 6): the same bare cycle through ZooKeeper's own C
    // client, libzookeeper-mt (`c/zkc_worker.c`, compiled by run.sh). A limit, not a face: when
    // it is wanted and missing, the run fails instead of skipping it (below).
    if let Some(bin) = args.opt("zkc-worker") {
        impls.push(Impl {
            key: "zkc".into(),
            label: "C limit (libzookeeper-mt)".into(),
            cmd: v(&[&bin]),
            scenarios: vec!["s1", "s4"],
            startup: 0.5,
            warmup: 1.0,
        });
    }
    // The raw cycle plus one of zklock's extra costs at a time (diagnostics of scenario 1).
    for (key, variant, label) in [
        ("raw-watch", "watch", "raw + own-node watch"),
        ("raw-hop", "hop", "raw + runtime hops"),
        ("raw-watch-hop", "watch,hop", "raw + watch + hops"),
    ] {
        impls.push(Impl {
            key: key.into(),
            label: label.into(),
            cmd: v(&[&me, "worker", "--impl", "raw", "--variant", variant]),
            scenarios: vec!["s1"],
            startup: 0.5,
            warmup: 1.0,
        });
    }
    // `--extra-zklock BIN`: another build of this bench against a patched core (a prototype of
    // a proposed change), measured side by side with the current core.
    if let Some(bin) = args.opt("extra-zklock") {
        impls.insert(
            1,
            Impl {
                key: "zklock-proposed".into(),
                label: "zklock core, patched (--extra-zklock)".into(),
                cmd: v(&[&bin, "worker", "--impl", "zklock"]),
                scenarios: vec!["s1", "s2", "s3", "s4", "s5", "s6", "s6wait", "s9", "curve"],
                startup: 0.5,
                warmup: 1.0,
            },
        );
    }
    let mut skipped = Vec::new();
    match args.opt("java-cp") {
        Some(cp) => impls.push(Impl {
            key: "curator".into(),
            label: "Curator 5.4 (Java 17)".into(),
            cmd: v(&["java", "-cp", &cp, "ZkBench"]),
            scenarios: vec![
                "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "curve",
            ],
            startup: 3.0,
            warmup: 3.0,
        }),
        None => skipped.push(("curator".into(), "no --java-cp".into())),
    }
    match args.opt("kazoo-python") {
        Some(py) => impls.push(Impl {
            key: "kazoo".into(),
            label: "kazoo 2.8 (CPython)".into(),
            cmd: v(&[&py, &format!("{bench_dir}/kazoo_bench.py")]),
            scenarios: vec!["s1", "s3", "s4", "s5", "s6", "s8", "s9", "curve"],
            startup: 1.0,
            warmup: 1.0,
        }),
        None => skipped.push(("kazoo".into(), "no --kazoo-python".into())),
    }
    if let Some(py) = args.opt("python-face") {
        impls.push(Impl {
            key: "python".into(),
            label: "zklock Python face".into(),
            cmd: v(&[&py, &format!("{bench_dir}/face_python.py")]),
            scenarios: vec!["s1", "s2", "s3", "s4", "s6"],
            startup: 1.0,
            warmup: 1.0,
        });
    }
    if let Some(dir) = args.opt("node-face") {
        impls.push(Impl {
            key: "node".into(),
            label: "zklock Node face".into(),
            cmd: v(&["node", &format!("{dir}/face_node.mjs")]),
            scenarios: vec!["s1", "s3", "s4"],
            startup: 1.0,
            warmup: 1.0,
        });
    }
    if let Some(bin) = args.opt("c-face") {
        impls.push(Impl {
            key: "c".into(),
            label: "zklock C face".into(),
            cmd: v(&[&bin]),
            scenarios: vec!["s1", "s3", "s4"],
            startup: 0.5,
            warmup: 1.0,
        });
    }
    // --skip key=why, repeatable (faces run.sh found missing).
    let mut it = raw.iter();
    while let Some(a) = it.next() {
        if a == "--skip" {
            if let Some((k, why)) = it.next().and_then(|s| s.split_once('=')) {
                skipped.push((k.to_owned(), why.to_owned()));
            }
        }
    }
    let only = args.opt("impls");
    let wanted = |key: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|k| k == key))
    };
    if wanted("zkc") && args.opt("zkc-worker").is_none() {
        return Err(
            "the C limit `zkc` needs --zkc-worker BIN (bench/run.sh compiles \
                    bench/c/zkc_worker.c against libzookeeper-mt: scripts/install-deps.sh \
                    installs libzookeeper-mt-dev); leave it out with --impls"
                .into(),
        );
    }
    if let Some(only) = &only {
        // In the order named, repeats kept: `--impls zklock,curator,kazoo,zklock` measures
        // zklock first and last on the same servers (s9's order effect, bench/README).
        impls = only
            .split(',')
            .filter_map(|k| impls.iter().find(|i| i.key == k).cloned())
            .collect();
    } else {
        // Named only: it makes the server run with a TLS port (Netty) for everyone.
        impls.retain(|i| i.key != "zklock-tls");
    }
    Ok((impls, skipped))
}
