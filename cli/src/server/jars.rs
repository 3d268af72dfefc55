//! Finds the ZooKeeper server's jars that Debian's `zookeeper` package installs.
//!
//! One list for `zklock server` and the test harness: this file belongs to the CLI (a published
//! crate cannot depend on the unpublished `zklock-testkit`, issue 55), and the harness compiles
//! the same file with `#[path]` (tests/harness/src/lib.rs).

use std::path::Path;

const JAR_DIR: &str = "/usr/share/java";

/// The jars a 3.8 server needs (Debian names, without versions).
const JARS: &[&str] = &[
    "zookeeper",
    "zookeeper-jute",
    "netty-handler",
    "netty-common",
    "netty-buffer",
    "netty-transport",
    "netty-codec",
    "netty-resolver",
    "netty-transport-native-epoll",
    "netty-transport-native-unix-common",
    "slf4j-api",
    "slf4j-simple",
    "metrics-core",
    "commons-cli",
    "commons-io",
    "snappy-java",
];

/// The server's class path, or a message naming the missing package. `ZKLOCK_ZK_CLASSPATH`, when
/// set, is taken as it is: another server version's jars, which `scripts/zk-versions.sh` fetches
/// from Debian's archive for `make test-servers` (docs/interop.md, Server versions).
pub fn classpath() -> Result<String, String> {
    if let Ok(cp) = std::env::var("ZKLOCK_ZK_CLASSPATH") {
        if !cp.is_empty() {
            return Ok(cp);
        }
    }
    let dir = std::env::var("ZKLOCK_JAR_DIR").unwrap_or_else(|_| JAR_DIR.into());
    let mut parts = Vec::new();
    for jar in JARS {
        let p = Path::new(&dir).join(format!("{jar}.jar"));
        if !p.exists() {
            return Err(format!(
                "ZooKeeper cannot start: {} is missing (install Debian's `zookeeper` package: apt-get install -y zookeeper; `make test` does)",
                p.display()
            ));
        }
        parts.push(p.display().to_string());
    }
    Ok(parts.join(":"))
}
