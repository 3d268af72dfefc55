// A real Apache Curator lock holder for the partition-margin measurement (tests/trust/README.md):
// set up as a user would, with Curator's defaults (StandardConnectionStateErrorPolicy, session
// expiration simulated after a session timeout in SUSPENDED), it takes an InterProcessMutex and
// prints one line per signal on stdout, "<signal> <wall-clock ns>":
//
//   held       the mutex is acquired
//   suspended  ConnectionStateListener got SUSPENDED
//   lost       ConnectionStateListener got LOST (the signal a user stops work on)
//   reconnected / connected / read_only   other connection states, for the record
//
//   java CuratorPartitionHolder SERVERS PATH SESSION_MS
//
// It holds the lock until its stdin closes (the test closes it, or dies).
import java.time.Instant;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorPartitionHolder {
    public static void main(String[] args) throws Exception {
        String servers = args[0], path = args[1];
        int sessionMs = Integer.parseInt(args[2]);
        // Curator's getting-started client: newClient(connectString, session, connection, retry)
        // with the connection timeout left at Curator's default (15 s).
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            servers, sessionMs, 15000, new ExponentialBackoffRetry(1000, 3));
        client.getConnectionStateListenable().addListener(
            (c, state) -> emit(state.name().toLowerCase()));
        client.start();
        client.blockUntilConnected();
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        mutex.acquire();
        emit("held");
        while (System.in.read() >= 0) {
            // hold until stdin closes
        }
        System.exit(0);
    }

    static synchronized void emit(String signal) {
        Instant now = Instant.now();
        long ns = now.getEpochSecond() * 1_000_000_000L + now.getNano();
        System.out.println(signal + " " + ns);
        System.out.flush();
    }
}
