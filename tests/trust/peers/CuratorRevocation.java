// Curator's revocation for zklock's interop tests (issue 14):
//
//   java CuratorRevocation hold SERVERS PATH      an InterProcessMutex made revocable: prints
//                                                 "held <node>", then "revoked" when its
//                                                 RevocationListener is called (at most 60 s),
//                                                 releases and exits 0 (1 when never revoked)
//   java CuratorRevocation revoke SERVERS NODE    Revoker.attemptRevoke(client, NODE)
//   java CuratorRevocation lease SERVERS PATH N   holds one InterProcessSemaphoreV2(N) lease:
//                                                 prints "lease <node>", returns it and exits
//                                                 when stdin closes
//
// It lives in Curator's package so it can read a lock's own node path (protected getLockPath).
package org.apache.curator.framework.recipes.locks;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorRevocation {
    public static void main(String[] args) throws Exception {
        String mode = args[0], servers = args[1], path = args[2];
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(servers).sessionTimeoutMs(10000).connectionTimeoutMs(10000)
            .retryPolicy(new ExponentialBackoffRetry(50, 10)).build();
        client.start();
        client.blockUntilConnected();
        int status = 0;
        if (mode.equals("hold")) {
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            CountDownLatch revoked = new CountDownLatch(1);
            mutex.makeRevocable(lock -> revoked.countDown());
            mutex.acquire();
            System.out.println("held " + mutex.getLockPath());
            System.out.flush();
            if (revoked.await(60, TimeUnit.SECONDS)) {
                System.out.println("revoked");
            } else {
                status = 1;
            }
            System.out.flush();
            mutex.release();
        } else if (mode.equals("revoke")) {
            Revoker.attemptRevoke(client, path);
        } else if (mode.equals("lease")) {
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, Integer.parseInt(args[3]));
            Lease lease = semaphore.acquire();
            System.out.println("lease " + path + "/leases/" + lease.getNodeName());
            System.out.flush();
            while (System.in.read() >= 0) {}
            semaphore.returnLease(lease);
        }
        client.close();
        System.exit(status);
    }
}
