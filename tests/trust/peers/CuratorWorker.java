// A real Apache Curator client for zklock's interop tests: takes a lock ROUNDS times and logs
// each critical section as "<who> <kind> <token> <enter_ns> <exit_ns>" (token = czxid of its node).
//
//   java CuratorWorker SERVERS PATH MODE ROUNDS LOGFILE      MODE: mutex | read | write | rw-random
//
// It lives in Curator's package so it can read a lock's own node path (protected getLockPath).
package org.apache.curator.framework.recipes.locks;

import java.io.FileWriter;
import java.util.Random;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorWorker {
    public static void main(String[] args) throws Exception {
        String servers = args[0], path = args[1], mode = args[2], log = args[4];
        int rounds = Integer.parseInt(args[3]);
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(servers).sessionTimeoutMs(10000).connectionTimeoutMs(10000)
            .retryPolicy(new ExponentialBackoffRetry(50, 10)).build();
        client.start();
        client.blockUntilConnected();
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
        Random random = new Random(System.nanoTime());
        try (FileWriter out = new FileWriter(log, true)) {
            for (int i = 0; i < rounds; i++) {
                String kind = mode.equals("rw-random") ? (random.nextInt(4) == 0 ? "write" : "read") : mode;
                InterProcessMutex lock = kind.equals("mutex") ? mutex : kind.equals("read") ? rw.readLock() : rw.writeLock();
                lock.acquire();
                long token = client.checkExists().forPath(lock.getLockPath()).getCzxid();
                long enter = wallNanos();
                Thread.sleep(1 + random.nextInt(3));
                long exit = wallNanos();
                lock.release();
                out.write("curator " + (kind.equals("read") ? "shared" : "exclusive") + " " + token + " " + enter + " " + exit + "\n");
                out.flush();
            }
        }
        client.close();
    }

    static long wallNanos() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }
}
