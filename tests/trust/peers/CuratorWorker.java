// A real Apache Curator client for zklock's interop tests: takes a lock ROUNDS times and logs
// each critical section as "<who> <kind> <token> <enter_ns> <exit_ns>" (token = czxid of its node).
//
//   java CuratorWorker SERVERS PATH MODE ROUNDS LOGFILE
//   MODE: mutex | read | write | rw-random | semaphore-N (InterProcessSemaphoreV2 of N leases,
//   logged as shared sections) | semaphore-mutex (InterProcessSemaphoreMutex, exclusive)
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
            if (mode.startsWith("semaphore")) {
                semaphore(client, path, mode, rounds, random, out);
                client.close();
                return;
            }
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

    /** Curator's semaphores: the token is the czxid of the lease node. */
    static void semaphore(CuratorFramework client, String path, String mode, int rounds, Random random,
            FileWriter out) throws Exception {
        boolean mutex = mode.equals("semaphore-mutex");
        InterProcessSemaphoreMutex semaphoreMutex = new InterProcessSemaphoreMutex(client, path);
        InterProcessSemaphoreV2 semaphore =
            mutex ? null : new InterProcessSemaphoreV2(client, path, Integer.parseInt(mode.substring(10)));
        java.lang.reflect.Field leaseField = InterProcessSemaphoreMutex.class.getDeclaredField("lease");
        leaseField.setAccessible(true);
        for (int i = 0; i < rounds; i++) {
            Lease lease;
            if (mutex) {
                semaphoreMutex.acquire();
                lease = (Lease) leaseField.get(semaphoreMutex);
            } else {
                lease = semaphore.acquire();
            }
            long token = client.checkExists().forPath(path + "/leases/" + lease.getNodeName()).getCzxid();
            long enter = wallNanos();
            Thread.sleep(1 + random.nextInt(3));
            long exit = wallNanos();
            if (mutex) {
                semaphoreMutex.release();
            } else {
                semaphore.returnLease(lease);
            }
            out.write("curator " + (mutex ? "exclusive" : "shared") + " " + token + " " + enter + " " + exit + "\n");
            out.flush();
        }
    }

    static long wallNanos() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }
}
