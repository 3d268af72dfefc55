//! The Rust face's runner of the conformance cases (`tests/conformance/cases.txt`, format in its
//! README): every case through the crate's public API, as a Rust user would write it. Rust takes
//! durations as `Duration`, so a negative session timeout cannot be expressed (reported `n/a`);
//! foreign timeouts go through the core's one rule, `zklock::Wait::from_secs`.
//!
//! A test binary of its own (`harness = false`): one line per case, then
//! `conformance rust: N passed, N failed` (and `n/a` cases named apart); non-zero exit on any
//! failure. `ZKLOCK_CONFORMANCE_CASES=id,id,...` runs only those cases (the server smoke of
//! `make test`, scripts/test-servers.sh); an id it names that cases.txt lacks is a failure.

mod break_cases;
mod common;
mod lease_cases;
mod peer_cases;
mod queue_cases;

use std::time::Duration;

use zklock::{
    AclPolicy, Client, ElectionStyle, ErrorKind, Lease, Options, Owner, SecureParts, Wait, Write,
    Written,
};

use zklock_testkit::conformance::{cases, pem_body_shown, Case};

/// What happened, as the cases' outcome words.
enum Outcome {
    Is(String),
    NotApplicable(&'static str),
}

fn word(s: &str) -> Outcome {
    Outcome::Is(s.into())
}

fn outcome_of<T>(result: zklock::Result<T>, ok: &str) -> Outcome {
    match result {
        Ok(_) => word(ok),
        Err(e) => error_word(&e),
    }
}

fn error_word(e: &zklock::Error) -> Outcome {
    assert!(
        e.message().len() <= 300,
        "an error message of {} characters",
        e.message().len()
    );
    word(e.kind().as_str())
}

struct Runner {
    servers: String,
    client: Client,
    case_path: String,
}

impl Runner {
    async fn connect(&self, options: Options) -> zklock::Result<Client> {
        Client::connect(
            &self.servers,
            options.connect_timeout(Duration::from_secs(5)),
        )
        .await
    }

    async fn run(&self, case: &Case) -> Outcome {
        let input = case.input.as_str();
        match case.op.as_str() {
            "path" => match self.client.mutex(input) {
                Err(e) => error_word(&e),
                Ok(lock) => match lock.try_acquire().await {
                    Ok(lease) => {
                        if let Some(lease) = lease {
                            lease.release().await.unwrap();
                        }
                        word("ok")
                    }
                    Err(e) => error_word(&e),
                },
            },
            "rwpath" => outcome_of(self.client.rw_lock(input), "ok"),
            "multi" => {
                let paths: Vec<&str> = input.split(',').filter(|p| !p.is_empty()).collect();
                outcome_of(self.client.multi_lock(paths), "ok")
            }
            "hosts" => {
                let options = Options::default().connect_timeout(Duration::from_secs(5));
                match Client::connect(input, options).await {
                    Ok(c) => {
                        c.close().await;
                        word("ok")
                    }
                    Err(e) => error_word(&e),
                }
            }
            "session_timeout" => {
                let secs: f64 = input.parse().unwrap();
                if secs < 0.0 {
                    return Outcome::NotApplicable("a Rust Duration cannot be negative");
                }
                let options = Options::default().session_timeout(Duration::from_secs_f64(secs));
                self.connect_and_close(options).await
            }
            "server_tick" => {
                let secs: f64 = input.parse().unwrap();
                let options = Options::default()
                    .session_timeout(Duration::from_secs(4))
                    .server_tick(Duration::from_secs_f64(secs));
                self.connect_and_close(options).await
            }
            "learned_tick" => {
                let mut options = Options::default().session_timeout(Duration::from_secs(4));
                if !input.is_empty() {
                    options = options.server_tick(Duration::from_secs_f64(input.parse().unwrap()));
                }
                match self.connect(options).await {
                    Ok(c) => {
                        let tick = c.server_tick();
                        c.close().await;
                        word(&tick.as_millis().to_string())
                    }
                    Err(e) => error_word(&e),
                }
            }
            "server_features" => match self.connect(Options::default()).await {
                Ok(c) => {
                    let class = c.server_features().version_class();
                    c.close().await;
                    word(class)
                }
                Err(e) => error_word(&e),
            },
            "path_stats_limit" => {
                match zklock::support::path_stats_limit_from_i64(input.parse().unwrap()) {
                    Err(e) => error_word(&e),
                    Ok(limit) => {
                        self.connect_and_close(Options::default().path_stats_limit(limit))
                            .await
                    }
                }
            }
            "identity" => {
                self.connect_and_close(Options::default().identity(input))
                    .await
            }
            "acl" => match input.parse::<AclPolicy>() {
                Err(e) => error_word(&e),
                Ok(acl) => {
                    let options = Options::default().auth("user:secret").acl(acl);
                    self.connect_and_close(options).await
                }
            },
            "timeout" => self.contended_acquire(input).await,
            "deadline" => self.deadline_acquire(input).await,
            "guarded_timeout" => self.guarded_timeout(input).await,
            "guarded_size" => self.guarded_size(input).await,
            "participants_timeout" => {
                let timeout = match Wait::from_secs(Some(seconds(input))) {
                    Ok(wait) => wait.time_left(),
                    Err(e) => return error_word(&e),
                };
                let lock = self.client.mutex(&self.case_path).unwrap();
                let lease = lock.acquire().await.unwrap();
                let listed = lock.participants_timeout(timeout).await;
                lease.release().await.unwrap();
                match listed {
                    Ok(list) => word(&format!("listed={}", list.len())),
                    Err(e) => error_word(&e),
                }
            }
            "secret" => self.secret(input).await,
            "sasl" => {
                let (user, password) = input.split_once(':').expect("sasl takes user:password");
                match self.connect(Options::default().sasl(user, password)).await {
                    Ok(c) => {
                        c.close().await;
                        word("ok")
                    }
                    Err(e) if format!("{e} {e:?}").contains(password) => word("shown"),
                    Err(e) => error_word(&e),
                }
            }
            "secret_pem" => self.secret_pem(input).await,
            "semaphore" => {
                let Ok(n) = input.parse::<i64>() else {
                    panic!("semaphore input {input:?} is no integer");
                };
                let Ok(n) = u32::try_from(n) else {
                    return Outcome::NotApplicable(
                        "N is a u32 in Rust: a negative or larger N does not compile",
                    );
                };
                match self.client.semaphore(&self.case_path, n) {
                    Err(e) => error_word(&e),
                    Ok(sem) => match sem.acquire_timeout(Duration::from_secs(5)).await {
                        Ok(lease) => {
                            lease.release().await.unwrap();
                            word("ok")
                        }
                        Err(e) => error_word(&e),
                    },
                }
            }
            "election_style" => match input.parse::<ElectionStyle>() {
                Err(e) => error_word(&e),
                Ok(style) => {
                    let election = self
                        .client
                        .election(&self.case_path, style, Some("conformance"))
                        .unwrap();
                    match election.lead_with(Wait::Try, None).await {
                        Ok(lead) => {
                            election.resign(lead, false).await.unwrap();
                            word("ok")
                        }
                        Err(e) => error_word(&e),
                    }
                }
            },
            "election_id" => {
                match self
                    .client
                    .election(&self.case_path, ElectionStyle::Latch, Some(input))
                {
                    Err(e) => error_word(&e),
                    Ok(election) => {
                        let lead = election.lead_with(Wait::Try, None).await.unwrap();
                        let leader = election.leader().await.unwrap().expect("we lead");
                        election.resign(lead, false).await.unwrap();
                        word(if leader.identity == input {
                            "ok"
                        } else {
                            "id-differs"
                        })
                    }
                }
            }
            "max_hold" => {
                let limit =
                    match zklock::support::duration_from_secs_f64(seconds(input), "max_hold") {
                        Ok(limit) => limit,
                        Err(e) => return error_word(&e),
                    };
                match self
                    .client
                    .mutex(&self.case_path)
                    .unwrap()
                    .max_hold(Some(limit))
                {
                    Err(e) => error_word(&e),
                    Ok(lock) => {
                        let lease = lock.acquire().await.unwrap();
                        let lost = tokio::time::timeout(Duration::from_secs(5), lease.lost()).await;
                        let outcome = match (lost, lease.lost_reason()) {
                            (Ok(()), Some(reason)) => {
                                let why = reason.split_once(" lost: ").map_or("", |(_, w)| w);
                                let first = why.split([':', ' ']).next().unwrap_or_default();
                                word(&format!("lost,{first}"))
                            }
                            _ => word("held"),
                        };
                        lease.release().await.unwrap();
                        outcome
                    }
                }
            }
            "lock_delay" => {
                let delay =
                    match zklock::support::duration_from_secs_f64(seconds(input), "lock_delay") {
                        Ok(delay) => delay,
                        Err(e) => return error_word(&e),
                    };
                match self
                    .client
                    .mutex(&self.case_path)
                    .unwrap()
                    .lock_delay(Some(delay))
                {
                    Err(e) => error_word(&e),
                    Ok(lock) => match lock.try_acquire().await {
                        Ok(Some(lease)) => {
                            lease.release().await.unwrap();
                            word("ok")
                        }
                        Ok(None) => word("not-acquired"),
                        Err(e) => error_word(&e),
                    },
                }
            }
            "scenario" => self.scenario(input).await,
            other => panic!("unknown op {other:?}"),
        }
    }

    /// The `secret` op: nothing the Rust face shows (`Debug`, messages) holds the password.
    async fn secret(&self, secret: &str) -> Outcome {
        let options = Options::default()
            .auth(format!("conformance:{secret}"))
            .acl(AclPolicy::CreatorAll);
        let mut shown = format!("{options:?}");
        let client = self.connect(options).await.unwrap();
        let lock = client.mutex(&self.case_path).unwrap();
        let lease = lock.acquire().await.unwrap();
        let participants = lock.participants().await.unwrap();
        shown += &format!("{client:?} {lease:?} {participants:?}");
        lease.release().await.unwrap();
        client.close().await;
        let err = self
            .connect(Options::default().auth(secret))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), zklock::ErrorKind::InvalidArgument, "{err}");
        shown += &format!("{err} {err:?}");
        word(if shown.contains(secret) {
            "shown"
        } else {
            "hidden"
        })
    }

    /// The input, PEM text of a private key, given where a CA belongs, as all three TLS
    /// options, and as the key alone: every error (Display and Debug) and the options' Debug.
    async fn secret_pem(&self, pem: &str) -> Outcome {
        let given = || Some(pem.to_owned());
        let attempts = [
            SecureParts {
                tls_ca: given(),
                ..Default::default()
            },
            SecureParts {
                tls_ca: given(),
                tls_cert: given(),
                tls_key: given(),
                ..Default::default()
            },
            SecureParts {
                tls_key: given(),
                ..Default::default()
            },
        ];
        let mut shown = String::new();
        for parts in attempts {
            let options = match parts.apply(Options::default()) {
                Ok(options) => options,
                Err(e) => {
                    shown += &format!("{e} {e:?}");
                    continue;
                }
            };
            shown += &format!("{options:?}");
            match self.connect(options).await {
                Ok(c) => {
                    c.close().await;
                    return word("connected");
                }
                Err(e) => shown += &format!("{e} {e:?}"),
            }
        }
        word(if pem_body_shown(&shown, pem) {
            "shown"
        } else {
            "hidden"
        })
    }

    async fn connect_and_close(&self, options: Options) -> Outcome {
        match self.connect(options).await {
            Ok(c) => {
                c.close().await;
                word("ok")
            }
            Err(e) => error_word(&e),
        }
    }

    /// Another client holds the lock and frees it 300 ms later; we acquire with the timeout.
    /// A guarded create with the input as its timeout (the acquire's rule, as a Rust face user
    /// gets it from `Wait::time_left`); on failure the same create must succeed.
    async fn guarded_timeout(&self, input: &str) -> Outcome {
        let timeout = match Wait::from_secs(Some(seconds(input))) {
            Ok(wait) => wait.time_left(),
            Err(e) => return error_word(&e),
        };
        let data = format!("{}-data", self.case_path);
        let lease = self.client.mutex(&self.case_path).unwrap().acquire().await;
        let lease = lease.unwrap();
        let written = lease
            .guarded_write_timeout(vec![Write::create(&data, "a")], timeout)
            .await;
        let outcome = match written {
            Ok(done) => {
                lease
                    .guarded_write(vec![Write::delete(&data)])
                    .await
                    .unwrap();
                match done.as_slice() {
                    [Written::Created(p)] if *p == data => word("created"),
                    other => word(&format!("{other:?}")),
                }
            }
            Err(e) => {
                let again = vec![Write::create(&data, ""), Write::delete(&data)];
                match lease.guarded_write(again).await {
                    Ok(_) => error_word(&e),
                    Err(_) => word("written-after-timeout"),
                }
            }
        };
        lease.release().await.unwrap();
        outcome
    }

    async fn guarded_size(&self, input: &str) -> Outcome {
        let size: usize = input.parse().expect("guarded_size takes a byte count");
        let data = format!("{}-data", self.case_path);
        let lease = self.client.mutex(&self.case_path).unwrap().acquire().await;
        let lease = lease.unwrap();
        let written = lease
            .guarded_write(vec![Write::create(&data, vec![b'a'; size])])
            .await;
        let outcome = match written {
            Ok(_) => {
                lease
                    .guarded_write(vec![Write::delete(&data)])
                    .await
                    .unwrap();
                "created".to_owned()
            }
            Err(e) => match error_word(&e) {
                Outcome::Is(kind) => kind,
                Outcome::NotApplicable(_) => unreachable!(),
            },
        };
        let state = lease.state();
        let _ = lease.release().await;
        match state {
            zklock::LeaseState::Held => word(&outcome),
            other => word(&format!("{outcome},{}", other.as_str())),
        }
    }

    async fn contended_acquire(&self, input: &str) -> Outcome {
        let wait = match Wait::from_secs(Some(seconds(input))) {
            Ok(wait) => wait,
            Err(e) => return error_word(&e),
        };
        self.contended(|lock| lock.acquire_as(Owner::SHARED, wait, None))
            .await
    }

    /// Rust's deadline is an `Instant`: `acquire_until(Some(now ± input))`.
    async fn deadline_acquire(&self, input: &str) -> Outcome {
        let secs = seconds(input);
        let offset = Duration::from_secs_f64(secs.abs());
        let now = std::time::Instant::now();
        let deadline = if secs < 0.0 {
            now.checked_sub(offset).unwrap_or(now)
        } else {
            now + offset
        };
        self.contended(|lock| lock.acquire_until(Some(deadline)))
            .await
    }

    /// Another client holds the case's lock and frees it 300 ms later; meanwhile `acquire`.
    async fn contended<F, A>(&self, acquire: A) -> Outcome
    where
        F: std::future::Future<Output = zklock::Result<Lease>>,
        A: FnOnce(&zklock::Lock) -> F,
    {
        let other = self.connect(Options::default()).await.unwrap();
        let held = other
            .mutex(&self.case_path)
            .unwrap()
            .acquire()
            .await
            .unwrap();
        let frees = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            held.release().await.unwrap();
            other.close().await;
        });
        let lock = self.client.mutex(&self.case_path).unwrap();
        let outcome = match acquire(&lock).await {
            Ok(lease) => {
                lease.release().await.unwrap();
                word("acquired")
            }
            Err(e) if e.kind() == ErrorKind::Timeout => word("not-acquired"),
            Err(e) => error_word(&e),
        };
        frees.await.unwrap();
        outcome
    }

    /// `n` tasks share one lock value (an `Arc<Lock>`, as in an app state), each acquires it,
    /// acquires it again nested and releases both (issue 50): at most one inside at a time,
    /// `n` distinct tokens increasing in the order they came in, and each nested acquire a
    /// count of 2 on its caller's node.
    async fn concurrent_callers(&self, n: usize) -> Outcome {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::{Arc, Mutex as StdMutex};
        let lock = Arc::new(self.client.mutex(&self.case_path).unwrap());
        let (inside, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let tokens = Arc::new(StdMutex::new(Vec::new()));
        let barrier = Arc::new(tokio::sync::Barrier::new(n));
        let callers: Vec<_> = (0..n)
            .map(|_| {
                let (lock, inside, most) = (lock.clone(), inside.clone(), most.clone());
                let (tokens, barrier) = (tokens.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    let lease = lock.acquire().await.unwrap();
                    most.fetch_max(inside.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    tokens.lock().unwrap().push(lease.token());
                    let nested = lock.acquire().await.unwrap();
                    let counted = lock.hold_count() == 2 && nested.token() == lease.token();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    nested.release().await.unwrap();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    lease.release().await.unwrap();
                    counted
                })
            })
            .collect();
        let mut all_counted = true;
        for caller in callers {
            all_counted &= caller.await.unwrap();
        }
        let tokens = tokens.lock().unwrap().clone();
        let up = tokens.len() == n && tokens.windows(2).all(|w| w[0] < w[1]);
        word(&format!(
            "{},{},{}",
            if most.load(Ordering::SeqCst) == 1 {
                "excluded"
            } else {
                "overlapped"
            },
            if up { "tokens-up" } else { "tokens-not-up" },
            if all_counted {
                "counted-up"
            } else {
                "not-counted"
            },
        ))
    }

    async fn scenario(&self, name: &str) -> Outcome {
        let path = self.case_path.as_str();
        let mutex = || self.client.mutex(path).unwrap();
        match name {
            "reenter-same-owner" => {
                let lock = mutex();
                let (a, b) = (lock.acquire().await.unwrap(), lock.acquire().await.unwrap());
                let count = lock.hold_count();
                b.release().await.unwrap();
                a.release().await.unwrap();
                word(if count == 2 {
                    "held-twice"
                } else {
                    "not-reentrant"
                })
            }
            "concurrent-callers-one-value" => self.concurrent_callers(5).await,
            "second-owner-try" => {
                // A second lock value is a second owner, whatever the task.
                let held = mutex().acquire().await.unwrap();
                let tried = mutex().try_acquire().await.unwrap();
                held.release().await.unwrap();
                word(if tried.is_none() {
                    "not-acquired"
                } else {
                    "acquired"
                })
            }
            "other-client-try" => {
                let other = self.connect(Options::default()).await.unwrap();
                let held = other.mutex(path).unwrap().acquire().await.unwrap();
                let tried = mutex().try_acquire().await.unwrap();
                held.release().await.unwrap();
                other.close().await;
                word(if tried.is_none() {
                    "not-acquired"
                } else {
                    "acquired"
                })
            }
            "release-twice" => {
                // A Rust lease is released by value, once; a second release of the same hold
                // is a release through a clone of the hold that is no longer there.
                let lock = mutex();
                let lease = lock.acquire().await.unwrap();
                let again = lock.reenter().unwrap();
                lease.release().await.unwrap();
                again.release().await.unwrap();
                Outcome::NotApplicable(
                    "a Rust Lease is consumed by release(); a second release does not compile",
                )
            }
            "release-not-held" => Outcome::NotApplicable(
                "Rust releases a Lease value; there is no release call without one",
            ),
            "lock-after-close" => {
                let c = self.connect(Options::default()).await.unwrap();
                c.close().await;
                outcome_of(c.mutex(path), "ok")
            }
            "acquire-after-close" => {
                let c = self.connect(Options::default()).await.unwrap();
                let lock = c.mutex(path).unwrap();
                c.close().await;
                outcome_of(lock.acquire().await, "acquired")
            }
            "upgrade" => {
                let rw = self.client.rw_lock(path).unwrap();
                let read = rw.read().acquire().await.unwrap();
                let outcome = outcome_of(rw.write().try_acquire().await, "acquired");
                read.release().await.unwrap();
                outcome
            }
            "downgrade" => {
                let rw = self.client.rw_lock(path).unwrap();
                let write = rw.write().acquire().await.unwrap();
                let outcome = match rw.read().try_acquire().await {
                    Ok(Some(read)) => {
                        read.release().await.unwrap();
                        word("acquired")
                    }
                    Ok(None) => word("not-acquired"),
                    Err(e) => error_word(&e),
                };
                write.release().await.unwrap();
                outcome
            }
            "state-held" => {
                let lease = mutex().acquire().await.unwrap();
                let state = lease.state();
                lease.release().await.unwrap();
                word(state.as_str())
            }
            "state-released" => {
                // A released Rust lease is gone; a re-entrant clone shows the hold's state.
                let lock = mutex();
                let lease = lock.acquire().await.unwrap();
                let watcher = lock.reenter().unwrap();
                watcher.release().await.unwrap();
                lease.release().await.unwrap();
                let state = released_state(&lock).await;
                word(state)
            }
            "state-lost-on-close" => {
                let c = self.connect(Options::default()).await.unwrap();
                let lease = c.mutex(path).unwrap().acquire().await.unwrap();
                c.close().await;
                word(lease.state().as_str())
            }
            "subscription" => {
                let c = self.connect(Options::default()).await.unwrap();
                let lease = c.mutex(path).unwrap().acquire().await.unwrap();
                let (tx, rx) = std::sync::mpsc::channel();
                lease.subscribe(move |s| tx.send(s).unwrap());
                c.close().await;
                let heard = heard_until_lost(&rx);
                drop(lease);
                word(&heard)
            }
            "release-outcome" => {
                let lease = mutex().acquire().await.unwrap();
                word(lease.release().await.unwrap().as_str())
            }
            "release-outcome-reentrant" => {
                let lock = mutex();
                let first = lock.acquire().await.unwrap();
                let second = lock.acquire().await.unwrap();
                let outcome = second.release().await.unwrap();
                first.release().await.unwrap();
                word(outcome.as_str())
            }
            "release-outcome-lost" => {
                let c = self.connect(Options::default()).await.unwrap();
                let lease = c.mutex(path).unwrap().acquire().await.unwrap();
                c.close().await;
                word(lease.release().await.unwrap().as_str())
            }
            "kind-mutex" => {
                self.own_participant(mutex().acquire().await.unwrap(), true)
                    .await
            }
            "kind-read" | "kind-write" => {
                let rw = self.client.rw_lock(path).unwrap();
                let side = if name == "kind-read" {
                    rw.read()
                } else {
                    rw.write()
                };
                let lease = side.acquire().await.unwrap();
                self.own_participant(lease, true).await
            }
            "library" => {
                self.own_participant(mutex().acquire().await.unwrap(), false)
                    .await
            }
            "stats-outcomes" => {
                let c = self.connect(Options::default()).await.unwrap();
                let held = mutex().acquire().await.unwrap();
                let lock = c.mutex(path).unwrap();
                assert!(lock.try_acquire().await.unwrap().is_none());
                held.release().await.unwrap();
                let lease = lock.acquire().await.unwrap();
                let held_now = c.stats().held;
                lease.release().await.unwrap();
                let s = c.stats();
                c.close().await;
                word(&format!(
                    "acquired={},timed_out={},held={held_now},after={},holds={}",
                    s.acquired, s.timed_out, s.held, s.hold.count
                ))
            }
            "stats-lost" => {
                let c = self.connect(Options::default()).await.unwrap();
                let lease = c.mutex(path).unwrap().acquire().await.unwrap();
                c.close().await;
                tokio::time::timeout(Duration::from_secs(5), lease.lost())
                    .await
                    .unwrap();
                let s = c.stats();
                word(&format!("lost={},held={}", s.lost, s.held))
            }
            "guarded-write" => {
                let data = format!("{path}-data");
                let lease = mutex().acquire().await.unwrap();
                let created = lease.guarded_write(vec![Write::create(&data, "a")]).await;
                let more = lease
                    .guarded_write(vec![Write::set_data(&data, "b"), Write::delete(&data)])
                    .await;
                lease.release().await.unwrap();
                match (created, more) {
                    (Ok(c), Ok(m)) => match (c.as_slice(), m.as_slice()) {
                        ([Written::Created(p)], [Written::Set { version }, Written::Deleted])
                            if *p == data =>
                        {
                            word(&format!("created,version={version},deleted"))
                        }
                        other => word(&format!("{other:?}")),
                    },
                    (Err(e), _) | (_, Err(e)) => error_word(&e),
                }
            }
            "guarded-write-lost" => {
                let data = format!("{path}-data");
                let c = self.connect(Options::default()).await.unwrap();
                let lease = c.mutex(path).unwrap().acquire().await.unwrap();
                c.close().await;
                let first = outcome_of(
                    lease
                        .guarded_write(vec![Write::create(&data, "late")])
                        .await,
                    "written",
                );
                let other = mutex().acquire().await.unwrap();
                let again = other
                    .guarded_write(vec![Write::create(&data, ""), Write::delete(&data)])
                    .await;
                other.release().await.unwrap();
                match again {
                    Ok(_) => first,
                    Err(_) => word("written-after-loss"),
                }
            }
            "guarded-write-unknown-op" => {
                let lease = mutex().acquire().await.unwrap();
                let outcome = match Write::from_op("append", &format!("{path}-data"), None) {
                    Ok(w) => outcome_of(lease.guarded_write(vec![w]).await, "written"),
                    Err(e) => error_word(&e),
                };
                lease.release().await.unwrap();
                outcome
            }
            "semaphore-fills" => {
                let (a, b) = (
                    self.connect(Options::default()).await.unwrap(),
                    self.connect(Options::default()).await.unwrap(),
                );
                let one = a.semaphore(path, 2).unwrap().acquire().await.unwrap();
                let two = b.semaphore(path, 2).unwrap().acquire().await.unwrap();
                let tried = self.client.semaphore(path, 2).unwrap().try_acquire().await;
                drop((one, two));
                a.close().await;
                b.close().await;
                match tried {
                    Ok(Some(_)) => word("acquired"),
                    Ok(None) => word("not-acquired"),
                    Err(e) => error_word(&e),
                }
            }
            "semaphore-two-leases-one-value" => {
                let sem = self.client.semaphore(path, 2).unwrap();
                let first = sem.acquire().await.unwrap();
                let second = sem.try_acquire().await.unwrap();
                let outcome = match second {
                    Some(second) if second.path() != first.path() => {
                        second.release().await.unwrap();
                        word("acquired")
                    }
                    Some(_) => word("same-node"),
                    None => word("not-acquired"),
                };
                first.release().await.unwrap();
                outcome
            }
            "semaphore-mutex-not-reentrant" => {
                let sem = self.client.semaphore_mutex(path).unwrap();
                let held = sem.acquire().await.unwrap();
                let again = sem.try_acquire().await.unwrap();
                held.release().await.unwrap();
                word(if again.is_none() {
                    "not-acquired"
                } else {
                    "acquired"
                })
            }
            "kind-lease" => {
                let sem = self.client.semaphore(path, 2).unwrap();
                let lease = sem.acquire().await.unwrap();
                let participants = sem.participants().await.unwrap();
                let ours = participants
                    .iter()
                    .find(|p| p.node == lease.path())
                    .expect("our node is among the participants");
                let kind = ours.kind.as_str();
                lease.release().await.unwrap();
                word(kind)
            }
            "revoke-requested" => {
                let lease = mutex().acquire().await.unwrap();
                let (tx, rx) = tokio::sync::oneshot::channel();
                lease.on_revoke(move || {
                    tx.send(()).ok();
                });
                let other = self.connect(Options::default()).await.unwrap();
                other.revoke(path, None).await.unwrap();
                let heard = tokio::time::timeout(Duration::from_secs(5), rx).await;
                other.close().await;
                lease.release().await.unwrap();
                word(if matches!(heard, Ok(Ok(()))) {
                    "revoke-requested"
                } else {
                    "not-requested"
                })
            }
            "revoke-not-held" => outcome_of(self.client.revoke(path, None).await, "revoked"),
            "election-handover" => {
                let other = self.connect(Options::default()).await.unwrap();
                let a = self
                    .client
                    .election(path, ElectionStyle::Selector, Some("a"))
                    .unwrap();
                let b = other
                    .election(path, ElectionStyle::Selector, Some("b"))
                    .unwrap();
                let a_lead = a.lead().await.unwrap();
                let a_token = a_lead.token();
                let waiting = b.start_lead(Wait::Forever);
                a.resign(a_lead, false).await.unwrap();
                let b_lead = waiting.await.unwrap();
                let leader = a.leader().await.unwrap().expect("b leads").identity;
                let up = if b_lead.token() > a_token {
                    "token-up"
                } else {
                    "token-down"
                };
                b.resign(b_lead, false).await.unwrap();
                other.close().await;
                word(&format!("{leader},{up}"))
            }
            "election-requeue" => {
                let other = self.connect(Options::default()).await.unwrap();
                let a = self
                    .client
                    .election(path, ElectionStyle::Latch, Some("a"))
                    .unwrap();
                let b = other
                    .election(path, ElectionStyle::Latch, Some("b"))
                    .unwrap();
                let a_lead = a.lead().await.unwrap();
                let waiting = b.start_lead(Wait::Forever);
                wait_for_participants(&a, 2).await;
                let again = a.resign(a_lead, true).await.unwrap().expect("requeued");
                let b_lead = waiting.await.unwrap();
                wait_for_participants(&a, 2).await;
                let order: Vec<String> = a
                    .participants()
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|p| p.identity)
                    .collect();
                b.resign(b_lead, false).await.unwrap();
                again.await.unwrap().release().await.unwrap();
                other.close().await;
                word(&order.join(","))
            }
            "election-mixed-layouts" => {
                let other = self.connect(Options::default()).await.unwrap();
                let theirs = other
                    .election(path, ElectionStyle::Latch, Some("latch"))
                    .unwrap()
                    .lead()
                    .await
                    .unwrap();
                let outcome = match self
                    .client
                    .election(path, ElectionStyle::Selector, Some("selector"))
                    .unwrap()
                    .lead_with(Wait::Try, None)
                    .await
                {
                    Ok(_) => word("led"),
                    Err(e) => error_word(&e),
                };
                let left = mutex().participants().await.unwrap().len();
                theirs.release().await.unwrap();
                other.close().await;
                if left != 1 {
                    return word("left-node");
                }
                outcome
            }
            "election-observe" => {
                let other = self.connect(Options::default()).await.unwrap();
                let watch = self.client.observe_leader(path).unwrap();
                let wait = Wait::timeout(Duration::from_secs(10));
                let id = |p: Option<zklock::Participant>| p.map_or("none".into(), |p| p.identity);
                let mut seen = vec![id(watch.next(wait).await.unwrap())];
                let a = other
                    .election(path, ElectionStyle::Selector, Some("a"))
                    .unwrap();
                let lead = a.lead().await.unwrap();
                seen.push(id(watch.next(wait).await.unwrap()));
                a.resign(lead, false).await.unwrap();
                seen.push(id(watch.next(wait).await.unwrap()));
                other.close().await;
                word(&seen.join(","))
            }
            "election-proclaim" => {
                let other = self.connect(Options::default()).await.unwrap();
                let a = self
                    .client
                    .election(path, ElectionStyle::Latch, Some("a"))
                    .unwrap();
                let lead = a.lead().await.unwrap();
                a.proclaim(&lead, b"p-data".to_vec(), None).await.unwrap();
                let seen = other
                    .election(path, ElectionStyle::Latch, None)
                    .unwrap()
                    .leader()
                    .await
                    .unwrap()
                    .map_or("none".into(), |p| p.identity);
                a.resign(lead, false).await.unwrap();
                other.close().await;
                word(&seen)
            }
            "kind-latch" | "library-kazoo-style" => {
                let style = if name == "kind-latch" {
                    ElectionStyle::Latch
                } else {
                    ElectionStyle::Kazoo
                };
                let election = self.client.election(path, style, None).unwrap();
                let lead = election.lead().await.unwrap();
                let ours = election
                    .participants()
                    .await
                    .unwrap()
                    .into_iter()
                    .find(|p| p.node == lead.path())
                    .expect("our node is among the participants");
                election.resign(lead, false).await.unwrap();
                word(if name == "kind-latch" {
                    ours.kind.as_str()
                } else {
                    ours.library.as_str()
                })
            }
            "check-token" => {
                let other = self.connect(Options::default()).await.unwrap();
                let lease = mutex().acquire().await.unwrap();
                let token = lease.token();
                let before = other.check(path, token, None).await.unwrap();
                lease.release().await.unwrap();
                let after = other.check(path, token, None).await.unwrap();
                other.close().await;
                word(&format!("{before},{after}"))
            }
            "valid-until" => {
                let own = self.connect(Options::default()).await.unwrap();
                let lease = own.mutex(path).unwrap().acquire().await.unwrap();
                let until = lease.valid_until();
                let now = std::time::Instant::now();
                let first = match until {
                    None => "none",
                    Some(u) if u <= now => "past",
                    Some(u) if u > now + own.session_timeout() => "beyond",
                    Some(_) => "ahead",
                };
                own.close().await;
                let second = match lease.valid_until() {
                    None => "none",
                    Some(_) => "some",
                };
                word(&format!("{first},{second}"))
            }
            "connection-states" => {
                let c = self.connect(Options::default()).await.unwrap();
                let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
                let (tx, rx) = tokio::sync::oneshot::channel();
                let tx = std::sync::Mutex::new(Some(tx));
                let sink = heard.clone();
                c.on_connection(move |s| {
                    sink.lock().unwrap().push(s.as_str());
                    if s.as_str() == "lost" {
                        if let Some(tx) = tx.lock().unwrap().take() {
                            tx.send(()).ok();
                        }
                    }
                });
                c.close().await;
                tokio::time::timeout(Duration::from_secs(5), rx)
                    .await
                    .expect("lost is heard")
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(300)).await;
                let heard = heard.lock().unwrap().join(",");
                word(&heard)
            }
            "cancel-waiting-acquire" => {
                let held = mutex().acquire().await.unwrap();
                let c = self.connect(Options::default()).await.unwrap();
                let acquire = c
                    .mutex(path)
                    .unwrap()
                    .start_acquire(Owner::SHARED, Wait::Forever);
                let canceller = acquire.canceller();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    canceller.cancel();
                });
                let outcome = match acquire.await {
                    Ok(lease) => {
                        lease.release().await.unwrap();
                        word("acquired")
                    }
                    Err(e) => error_word(&e),
                };
                let queue = mutex().participants().await.unwrap();
                c.close().await;
                held.release().await.unwrap();
                if queue.len() != 1 {
                    return word("left-node");
                }
                outcome
            }
            other => match lease_cases::scenario(self, other).await {
                Some(outcome) => outcome,
                None => match break_cases::scenario(self, other).await {
                    Some(outcome) => outcome,
                    None => match queue_cases::scenario(self, other).await {
                        Some(outcome) => outcome,
                        None => match peer_cases::scenario(self, other).await {
                            Some(outcome) => outcome,
                            None => panic!("unknown scenario {other:?}"),
                        },
                    },
                },
            },
        }
    }

    /// The kind (or library) of our node among the lock's participants.
    async fn own_participant(&self, lease: Lease, kind: bool) -> Outcome {
        let lock = self.client.mutex(&self.case_path).unwrap();
        let participants = lock.participants().await.unwrap();
        let ours = participants
            .iter()
            .find(|p| p.node == lease.path())
            .expect("our node is among the participants");
        let name = if kind {
            ours.kind.as_str()
        } else {
            ours.library.as_str()
        };
        lease.release().await.unwrap();
        word(name)
    }
}

/// The state a lock value's hold reports once released: the Rust face shows it on a lease of
/// the hold taken before the last release and kept by a subscription.
async fn released_state(lock: &zklock::Lock) -> &'static str {
    let lease = lock.acquire().await.unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    lease.subscribe(move |s| tx.send(s).unwrap());
    lease.release().await.unwrap();
    let mut last = zklock::LeaseState::Held;
    while let Ok(state) = rx.recv_timeout(Duration::from_secs(2)) {
        last = state;
        if state.is_final() {
            break;
        }
    }
    last.as_str()
}

/// The states a subscription reported, joined by `,`: until `lost`, then 300 ms more (nothing
/// may follow a final state), at most 5 s.
fn heard_until_lost(rx: &std::sync::mpsc::Receiver<zklock::LeaseState>) -> String {
    let mut heard = Vec::new();
    while let Ok(state) = rx.recv_timeout(Duration::from_secs(5)) {
        heard.push(state.as_str());
        if state == zklock::LeaseState::Lost {
            break;
        }
    }
    while let Ok(state) = rx.recv_timeout(Duration::from_millis(300)) {
        heard.push(state.as_str());
    }
    heard.join(",")
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let servers = common::servers().to_owned();
    let (mut passed, mut failed, mut not_applicable) = (0, 0, Vec::new());
    runtime.block_on(async {
        let client = Client::connect(&servers, Options::default()).await.unwrap();
        let only: Option<Vec<String>> = std::env::var("ZKLOCK_CONFORMANCE_CASES")
            .ok()
            .map(|v| v.split(',').map(|id| id.trim().to_owned()).collect());
        let all = cases(&servers);
        if let Some(only) = &only {
            for id in only {
                assert!(
                    all.iter().any(|c| &c.id == id),
                    "ZKLOCK_CONFORMANCE_CASES names {id}, which cases.txt lacks"
                );
            }
        }
        let chosen = all.into_iter().filter(|c| match &only {
            Some(o) => o.contains(&c.id),
            None => true,
        });
        for case in chosen {
            let runner = Runner {
                servers: servers.clone(),
                client: client.clone(),
                case_path: format!("/conformance/rust/{}-{}", case.id, std::process::id()),
            };
            match runner.run(&case).await {
                Outcome::Is(got) if got == case.expected => {
                    passed += 1;
                    println!("ok      {}", case.id);
                }
                Outcome::Is(got) => {
                    failed += 1;
                    println!(
                        "FAILED  {}: {} {:?} gave {got}, expected {}",
                        case.id,
                        case.op,
                        case.input.chars().take(40).collect::<String>(),
                        case.expected
                    );
                }
                Outcome::NotApplicable(why) => {
                    println!("n/a     {}: {why}", case.id);
                    not_applicable.push(case.id.clone());
                }
            }
        }
        client.close().await;
    });
    println!(
        "conformance rust: {} cases not applicable ({})",
        not_applicable.len(),
        not_applicable.join(", ")
    );
    println!("conformance rust: {passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}

/// Seconds as written in cases.txt (`nan`, `inf`, `-inf`, exponents).
fn seconds(input: &str) -> f64 {
    match input {
        "nan" => f64::NAN,
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        other => other.parse().unwrap(),
    }
}

/// Waits (up to 5 s) until an election lists `n` participants.
async fn wait_for_participants(election: &zklock::Election, n: usize) {
    for _ in 0..100 {
        if election.participants().await.unwrap().len() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the election on {} never had {n} participants",
        election.path()
    );
}
