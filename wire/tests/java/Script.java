// The fixed script of wire/tests/bytes.rs, run by ZooKeeper's own Java client (the jars of the
// server the harness runs). Compiled and run by that test; its frames are recorded by the
// test's pass-through proxy and compared with those of zklock-wire running the same script.
//
// Usage: java -cp <classes>:<zookeeper jars> Script <host:port> <base path>

import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public class Script {
    public static void main(String[] args) throws Exception {
        String server = args[0];
        String base = args[1];
        CountDownLatch connected = new CountDownLatch(1);
        Watcher watcher = event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        };
        ZooKeeper zk = new ZooKeeper(server, 6000, watcher);
        if (!connected.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected to " + server + " within 10 s");
        }
        Stat stat = new Stat();
        // create (create2: the variant with a Stat), persistent, with data.
        zk.create(base, "zklock-wire".getBytes("UTF-8"), ZooDefs.Ids.OPEN_ACL_UNSAFE,
                CreateMode.PERSISTENT, stat);
        // create2, ephemeral sequential.
        String eph = zk.create(base + "/e-", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE,
                CreateMode.EPHEMERAL_SEQUENTIAL, stat);
        // getData with a watch (the default watcher).
        zk.getData(base, true, stat);
        // exists without a watch.
        zk.exists(eph, false);
        // getChildren2.
        zk.getChildren(base, false, stat);
        // setData with a version (fires the data watch).
        zk.setData(base, "changed".getBytes("UTF-8"), 0);
        // multi: check + create + setData + delete.
        zk.multi(Arrays.asList(
                Op.check(base, 1),
                Op.create(base + "/m", "m".getBytes("UTF-8"), ZooDefs.Ids.OPEN_ACL_UNSAFE,
                        CreateMode.PERSISTENT),
                Op.setData(base + "/m", "n".getBytes("UTF-8"), 0),
                Op.delete(base + "/m", 1)));
        // sync (asynchronous only in the Java API).
        CountDownLatch synced = new CountDownLatch(1);
        zk.sync(base, (rc, path, ctx) -> synced.countDown(), null);
        if (!synced.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("sync not answered within 10 s");
        }
        // delete: the ephemeral node (any version), then the base (its version).
        zk.delete(eph, -1);
        zk.delete(base, 1);
        zk.close();
        System.out.println("script done: " + eph);
    }
}
