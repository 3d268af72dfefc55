// Apache Curator's leader election for zklock's interop tests (issue 25): LeaderLatch and
// LeaderSelector, run as a real Curator user would, logging each leadership as a checker line
// "<who> exclusive <token> <enter_ns> <exit_ns>" (token = czxid of its own election node,
// wall-clock ns).
//
//   java CuratorElection SERVERS PATH MODE ROUNDS LOGFILE ID
//
//   latch          ROUNDS times: a new LeaderLatch(client, PATH, ID), start(), await(), a
//                  1-3 ms section logged as "curator-latch-ID exclusive ...", close() (gives up
//                  leadership; Curator deletes the node in the background)
//   selector       one LeaderSelector(client, PATH, listener) with setId(ID) and autoRequeue();
//                  each takeLeadership logs a 1-3 ms section as "curator-selector-ID exclusive
//                  ..." and returns (the selector requeues); after ROUNDS leaderships it keeps
//                  the last one until close() interrupts it, then exits
//   show-latch     join with a LeaderLatch (ID), wait 1 s, then print ROUNDS lines 200 ms apart,
//   show-selector  or a LeaderSelector (ID, holding leadership if given it until close), each
//                    {"participants":[{"id":"...","leader":true|false},...],"leader":"..."}
//                  from getParticipants() / getLeader() ("leader":null when Curator sees none),
//                  then close(). LOGFILE is not written.
//   hold-latch     a LeaderLatch (ID): prints "leader <czxid> <node>" once leader, or
//                  "waiting <node>" if not leader after 1 s and "leader ..." when it becomes
//                  one; "not-leader <node>" if its LeaderLatchListener hears notLeader; until
//                  stdin closes, then close() and exit. LOGFILE is not written.
//   bench-latch    latch, but the enter stamp is taken in the LeaderLatchListener's isLeader
//                  callback (the first moment user code runs as leader) and the exit stamp
//                  just before close(); logged as "curator-bench-ID exclusive <czxid> <enter_ns>
//                  <exit_ns>". Sorted by enter, next.enter - prev.exit of consecutive lines is
//                  the handover latency (release called -> next leader's callback ran).
//
// stdout lines are flushed one by one. Session timeout 10 s, as CuratorWorker.
// It lives in Curator's leader package (package-private access); the selector's own lock node
// is read by reflection (private field "mutex", protected InterProcessMutex.getLockPath()).
package org.apache.curator.framework.recipes.leader;

import java.io.FileWriter;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorElection {
    static final Random random = new Random(System.nanoTime());

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: CuratorElection SERVERS PATH MODE ROUNDS LOGFILE ID");
            System.exit(2);
        }
        String servers = args[0], path = args[1], mode = args[2], log = args[4], id = args[5];
        int rounds = Integer.parseInt(args[3]);
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(servers).sessionTimeoutMs(10000).connectionTimeoutMs(10000)
            .retryPolicy(new ExponentialBackoffRetry(50, 10)).build();
        client.start();
        client.blockUntilConnected();
        switch (mode) {
            case "latch":
            case "bench-latch":
                try (FileWriter out = new FileWriter(log, true)) {
                    latch(client, path, rounds, out, id, mode.equals("bench-latch"));
                }
                break;
            case "selector":
                try (FileWriter out = new FileWriter(log, true)) {
                    selector(client, path, rounds, out, id);
                }
                break;
            case "show-latch":
            case "show-selector":
                show(client, path, rounds, id, mode.equals("show-latch"));
                break;
            case "hold-latch":
                holdLatch(client, path, id);
                break;
            default:
                System.err.println("CuratorElection: unknown mode " + mode);
                client.close();
                System.exit(2);
        }
        client.close();
        System.exit(0);
    }

    static void latch(CuratorFramework client, String path, int rounds, FileWriter out, String id,
            boolean bench) throws Exception {
        String who = (bench ? "curator-bench-" : "curator-latch-") + id;
        for (int i = 0; i < rounds; i++) {
            LeaderLatch latch = new LeaderLatch(client, path, id);
            AtomicLong called = new AtomicLong();
            if (bench) {
                latch.addListener(new LeaderLatchListener() {
                    public void isLeader() { called.compareAndSet(0, wallNanos()); }
                    public void notLeader() {}
                });
            }
            latch.start();
            latch.await();
            long enter = bench ? called.get() : wallNanos();
            if (bench && enter == 0) {
                // await() can return before the listener ran (both follow setLeadership(true)).
                while ((enter = called.get()) == 0) {
                    Thread.sleep(0, 100_000);
                }
            }
            long token = client.checkExists().forPath(latch.getOurPath()).getCzxid();
            Thread.sleep(1 + random.nextInt(3));
            long exit = wallNanos();
            latch.close();
            out.write(who + " exclusive " + token + " " + enter + " " + exit + "\n");
            out.flush();
        }
    }

    static void selector(CuratorFramework client, String path, int rounds, FileWriter out, String id)
            throws Exception {
        if (rounds <= 0) {
            return;
        }
        AtomicInteger done = new AtomicInteger();
        CountDownLatch finished = new CountDownLatch(1);
        LeaderSelector[] self = new LeaderSelector[1];
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            public void takeLeadership(CuratorFramework c) throws Exception {
                long enter = wallNanos();
                long token = c.checkExists().forPath(selectorNode(self[0])).getCzxid();
                Thread.sleep(1 + random.nextInt(3));
                long exit = wallNanos();
                synchronized (out) {
                    out.write("curator-selector-" + id + " exclusive " + token + " " + enter + " " + exit + "\n");
                    out.flush();
                }
                if (done.incrementAndGet() >= rounds) {
                    // Keep the last leadership until close() interrupts us, so autoRequeue
                    // does not take an unlogged one before main closes the selector.
                    finished.countDown();
                    Thread.sleep(Long.MAX_VALUE);
                }
            }
        });
        self[0] = selector;
        selector.setId(id);
        selector.autoRequeue();
        selector.start();
        finished.await();
        selector.close();
    }

    /** The selector's own lock node: its private InterProcessMutex's protected getLockPath(). */
    static String selectorNode(LeaderSelector selector) throws Exception {
        Field field = LeaderSelector.class.getDeclaredField("mutex");
        field.setAccessible(true);
        InterProcessMutex mutex = (InterProcessMutex) field.get(selector);
        Method getLockPath = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        getLockPath.setAccessible(true);
        return (String) getLockPath.invoke(mutex);
    }

    static void show(CuratorFramework client, String path, int rounds, String id, boolean latchMode)
            throws Exception {
        LeaderLatch latch = null;
        LeaderSelector selector = null;
        if (latchMode) {
            latch = new LeaderLatch(client, path, id);
            latch.start();
        } else {
            selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                public void takeLeadership(CuratorFramework c) throws Exception {
                    Thread.sleep(Long.MAX_VALUE); // lead until close() interrupts
                }
            });
            selector.setId(id);
            selector.start();
        }
        Thread.sleep(1000);
        for (int i = 0; i < rounds; i++) {
            if (i > 0) {
                Thread.sleep(200);
            }
            StringBuilder line = new StringBuilder("{\"participants\":[");
            boolean first = true;
            for (Participant p : latchMode ? latch.getParticipants() : selector.getParticipants()) {
                line.append(first ? "" : ",").append("{\"id\":").append(json(p.getId()))
                    .append(",\"leader\":").append(p.isLeader()).append("}");
                first = false;
            }
            Participant leader = latchMode ? latch.getLeader() : selector.getLeader();
            line.append("],\"leader\":").append(leader.isLeader() ? json(leader.getId()) : "null").append("}");
            System.out.println(line);
            System.out.flush();
        }
        if (latchMode) {
            latch.close();
        } else {
            selector.close();
        }
    }

    static void holdLatch(CuratorFramework client, String path, String id) throws Exception {
        LeaderLatch latch = new LeaderLatch(client, path, id);
        ExecutorService callbacks = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "latch-listener");
            t.setDaemon(true);
            return t;
        });
        latch.addListener(new LeaderLatchListener() {
            public void isLeader() {
                try {
                    String node = latch.getOurPath();
                    say("leader " + client.checkExists().forPath(node).getCzxid() + " " + node);
                } catch (Exception e) {
                    say("error " + e);
                }
            }

            public void notLeader() {
                say("not-leader " + latch.getOurPath());
            }
        }, callbacks);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {}
            } catch (IOException e) {
                // treated as closed
            }
        });
        stdin.setDaemon(true);
        latch.start();
        stdin.start();
        if (!latch.await(1, TimeUnit.SECONDS)) {
            while (latch.getOurPath() == null && stdin.isAlive()) {
                Thread.sleep(10);
            }
            // On the listeners' thread, so a later "leader" line cannot come before this one.
            callbacks.submit(() -> {
                if (!latch.hasLeadership() && latch.getOurPath() != null) {
                    say("waiting " + latch.getOurPath());
                }
            });
        }
        stdin.join();
        latch.close();
        callbacks.shutdown();
        callbacks.awaitTermination(5, TimeUnit.SECONDS);
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static long wallNanos() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }
}
