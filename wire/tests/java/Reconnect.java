// The reconnect script of wire/tests/bytes.rs, run by ZooKeeper's own Java client: digest auth,
// three watches (data, exist, child), then a connection the test cuts. The client reconnects on
// its own (the same session: ConnectRequest with id, password and last zxid, its AuthPacket
// again, SetWatches), then deletes the node (the watches fire) and closes.
//
// Usage: java -cp <classes>:<zookeeper jars> Reconnect <host:port> <base path>
// Prints "armed" when the connection may be cut, "done" at the end.

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public class Reconnect {
    public static void main(String[] args) throws Exception {
        String server = args[0];
        String base = args[1];
        CountDownLatch connected = new CountDownLatch(1);
        CountDownLatch disconnected = new CountDownLatch(1);
        CountDownLatch reconnected = new CountDownLatch(1);
        CountDownLatch deleted = new CountDownLatch(1);
        Watcher watcher = event -> {
            switch (event.getState()) {
                case SyncConnected:
                    if (event.getType() == Watcher.Event.EventType.None) {
                        if (disconnected.getCount() == 0) {
                            reconnected.countDown();
                        }
                        connected.countDown();
                    } else if (event.getType() == Watcher.Event.EventType.NodeDeleted) {
                        // One call for the data and the child watch: the same (default) watcher.
                        deleted.countDown();
                    }
                    break;
                case Disconnected:
                    disconnected.countDown();
                    break;
                default:
                    break;
            }
        };
        ZooKeeper zk = new ZooKeeper(server, 6000, watcher);
        await(connected, "connected to " + server);
        zk.addAuthInfo("digest", "wire:secret".getBytes("UTF-8"));
        Stat stat = new Stat();
        zk.create(base, "r".getBytes("UTF-8"), ZooDefs.Ids.OPEN_ACL_UNSAFE,
                CreateMode.PERSISTENT, stat);
        zk.getData(base, true, stat);
        zk.exists(base + "/x", true);
        zk.getChildren(base, true, stat);
        System.out.println("armed");
        System.out.flush();
        await(disconnected, "disconnected");
        await(reconnected, "reconnected");
        zk.delete(base, -1);
        await(deleted, "the watches fired");
        zk.close();
        System.out.println("done");
        System.out.flush();
    }

    private static void await(CountDownLatch latch, String what) throws InterruptedException {
        if (!latch.await(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not " + what + " within 20 s");
        }
    }
}
