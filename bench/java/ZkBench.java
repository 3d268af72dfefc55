// Curator 5 workers for the zklock benchmarks (issue 8). Same command line and output as the
// Rust workers: `--scenario sN --servers S --path P [--warmup s] [--secs s] ...`, one JSON line
// on stdout (scenarios 2, 5 and 6 print `ready ...` lines and wait for a line on stdin).
// Times come from System.nanoTime(), CLOCK_MONOTONIC on Linux, like the other workers.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class ZkBench {
    static Map<String, String> args = new HashMap<>();
    static BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));

    static String arg(String k) {
        String v = args.get(k);
        if (v == null) throw new IllegalArgumentException("missing --" + k);
        return v;
    }

    static double num(String k, double d) {
        String v = args.get(k);
        return v == null ? d : Double.parseDouble(v);
    }

    static CuratorFramework connect() throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(arg("servers"), 10_000, 15_000,
                new ExponentialBackoffRetry(100, 3));
        c.start();
        c.blockUntilConnected();
        return c;
    }

    static long rss() throws Exception {
        for (String l : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) {
                return Long.parseLong(l.substring(6).replace("kB", "").trim()) * 1024;
            }
        }
        return 0;
    }

    // User + system CPU time of the whole process in nanoseconds: the kernel counters the other
    // workers read through getrusage, here from /proc/self/stat (Java has no getrusage), in clock
    // ticks (USER_HZ, 100 on Linux).
    static long cpuNs() {
        try {
            String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static String withCpu(String json, long cpu, long ops) {
        String extra = String.format(",\"cpu_s\":%f", cpu / 1e9)
                + (ops > 0 ? String.format(",\"cpu_us_per_op\":%f", cpu / 1e3 / ops) : "");
        return json.substring(0, json.length() - 1) + extra + "}";
    }

    static String latencyJson(long[] lat, int n, double secs) {
        long[] v = Arrays.copyOf(lat, n);
        Arrays.sort(v);
        return String.format("{\"ops\":%d,\"secs\":%f,\"ops_s\":%f,\"p50_us\":%f,\"p99_us\":%f}", n, secs,
                n / secs, pct(v, 50) / 1000.0, pct(v, 99) / 1000.0);
    }

    static long pct(long[] sorted, double p) {
        if (sorted.length == 0) return 0;
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(1, Math.min(rank, sorted.length)) - 1];
    }

    static void ready(String json) {
        System.out.println("ready " + json);
        System.out.flush();
    }

    public static void main(String[] argv) throws Exception {
        for (int i = 0; i + 1 < argv.length; i += 2) args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        String out;
        switch (arg("scenario")) {
            case "s1": out = s1(); break;
            case "s2": out = s2(); break;
            case "s3": out = s3(); break;
            case "s8": out = s8(); break;
            case "s4": out = s4(); break;
            case "s5": out = s5(); break;
            case "s6": out = s6(); break;
            case "s7": out = s7(); break;
            case "s7r": out = s7r(); break;
            case "s9": out = s9(); break;
            case "curve": out = curve(); break;
            default: throw new IllegalArgumentException("no scenario " + arg("scenario"));
        }
        System.out.println(out);
        System.out.flush();
        System.exit(0);
    }

    // Time slots shared by workers running side by side (see bench/src/common.rs, Slots).
    static final class Slots {
        long start, warm, slot, n, me, rounds;

        Slots() {
            if (args.containsKey("start-at")) {
                start = Long.parseLong(arg("start-at"));
                warm = (long) num("warm-ms", 1000) * 1_000_000L;
                slot = (long) num("slot-ms", 500) * 1_000_000L;
                n = (long) num("nslots", 1);
                me = (long) num("my-slot", 0);
                rounds = (long) num("rounds", 1);
            } else {
                start = System.nanoTime();
                warm = (long) (num("warmup", 1) * 1e9);
                slot = (long) (num("secs", 3) * 1e9 / 0.9);
                n = 1;
                me = 0;
                rounds = 1;
            }
        }

        long warmFrom() { return start + me * warm; }
        long warmTo() { return warmFrom() + warm; }
        long from(long r) { return start + n * warm + (r * n + me) * slot; }
        long to(long r) { return from(r) + slot * 9 / 10; }
        double measuredSecs() { return (slot * 9 / 10) / 1e9; }
    }

    static void sleepUntil(long t) throws InterruptedException {
        long d = t - System.nanoTime();
        if (d > 0) Thread.sleep(d / 1_000_000, (int) (d % 1_000_000));
    }

    // Runs acquire+release on `mutexes` (one thread each) in the warm-up window and the slots.
    static String slotted(List<? extends InterProcessLock> mutexes) throws Exception {
        Slots sl = new Slots();
        int n = mutexes.size();
        long[][] counts = new long[n][(int) sl.rounds];
        List<long[]> lats = new ArrayList<>();
        int[] nlat = new int[n];
        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int idx = i;
            final long[] lat = new long[1 << 20];
            lats.add(lat);
            InterProcessLock m = mutexes.get(i);
            threads[i] = new Thread(() -> {
                try {
                    // The JIT needs longer than the others' warm-up: warm from launch (nothing
                    // is measured before the first slot) until the end of our own window.
                    while (System.nanoTime() < sl.warmTo()) {
                        m.acquire();
                        m.release();
                    }
                    for (int r = 0; r < sl.rounds; r++) {
                        sleepUntil(sl.from(r));
                        long to = sl.to(r);
                        while (true) {
                            long t0 = System.nanoTime();
                            if (t0 >= to) break;
                            m.acquire();
                            m.release();
                            long t1 = System.nanoTime();
                            if (t1 <= to) {
                                counts[idx][r]++;
                                if (nlat[idx] < lat.length) lat[nlat[idx]++] = t1 - t0;
                            }
                        }
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            threads[i].start();
        }
        // The process's CPU time over the measured windows, read once per window for all threads.
        long cpu = 0;
        for (int r = 0; r < sl.rounds; r++) {
            sleepUntil(sl.from(r));
            long c0 = cpuNs();
            sleepUntil(sl.to(r));
            cpu += cpuNs() - c0;
        }
        int total = 0;
        for (int i = 0; i < n; i++) {
            threads[i].join();
            total += nlat[i];
        }
        long[] all = new long[total];
        int k = 0;
        for (int i = 0; i < n; i++) {
            System.arraycopy(lats.get(i), 0, all, k, nlat[i]);
            k += nlat[i];
        }
        StringBuilder rounds = new StringBuilder("[");
        for (int r = 0; r < sl.rounds; r++) {
            long c = 0;
            for (int i = 0; i < n; i++) c += counts[i][r];
            rounds.append(r == 0 ? "" : ",").append(c / sl.measuredSecs());
        }
        rounds.append("]");
        String lat = latencyJson(all, total, sl.measuredSecs() * sl.rounds);
        return withCpu(lat.substring(0, lat.length() - 1) + ",\"rounds\":" + rounds + "}", cpu, total);
    }

    // One lease of an InterProcessSemaphoreV2 as an InterProcessLock (acquire, returnLease).
    static final class SemaphoreLock implements InterProcessLock {
        final InterProcessSemaphoreV2 semaphore;
        Lease lease;

        SemaphoreLock(CuratorFramework c, String path, int leases) {
            semaphore = new InterProcessSemaphoreV2(c, path, leases);
        }

        public void acquire() throws Exception { lease = semaphore.acquire(); }
        public boolean acquire(long time, TimeUnit unit) throws Exception {
            lease = semaphore.acquire(time, unit);
            return lease != null;
        }
        public void release() throws Exception { semaphore.returnLease(lease); lease = null; }
        public boolean isAcquiredInThisProcess() { return lease != null; }
    }

    // 7. A semaphore of `--leases` cycled by `--contenders` clients (a CuratorFramework each).
    static String s7() throws Exception {
        int leases = (int) num("leases", 4), contenders = (int) num("contenders", 1);
        List<CuratorFramework> clients = new ArrayList<>();
        List<SemaphoreLock> locks = new ArrayList<>();
        for (int i = 0; i < contenders; i++) {
            CuratorFramework c = connect();
            clients.add(c);
            locks.add(new SemaphoreLock(c, arg("path"), leases));
        }
        String out = slotted(locks);
        for (CuratorFramework c : clients) c.close();
        return out;
    }

    // 7, requests: ready, `--cycles` uncontended cycles on a stdin line, ready with the count.
    static String s7r() throws Exception {
        CuratorFramework c = connect();
        SemaphoreLock s = new SemaphoreLock(c, arg("path"), (int) num("leases", 4));
        s.acquire();
        s.release();
        int cycles = (int) num("cycles", 300);
        ready("{}");
        stdin.readLine();
        for (int i = 0; i < cycles; i++) {
            s.acquire();
            s.release();
        }
        String res = "{\"cycles\":" + cycles + "}";
        ready(res);
        stdin.readLine();
        c.close();
        return res;
    }

    // 1. Uncontended acquire+release cycles on one lock.
    static String s1() throws Exception {
        CuratorFramework c = connect();
        String out = slotted(List.of(new InterProcessMutex(c, arg("path"))));
        c.close();
        return out;
    }

    // 2. Re-entrant acquire+release while this thread already holds the lock.
    static String s2() throws Exception {
        CuratorFramework c = connect();
        InterProcessMutex m = new InterProcessMutex(c, arg("path"));
        m.acquire();
        ready("{}");
        stdin.readLine();
        long warm = (long) (num("warmup", 1) * 1e9), secs = (long) (num("secs", 3) * 1e9);
        long start = System.nanoTime(), from = 0, fromOps = 0, ops = 0;
        String res;
        while (true) {
            for (int i = 0; i < 1000; i++) {
                m.acquire();
                m.release();
            }
            ops += 1000;
            long now = System.nanoTime();
            if (from == 0 && now >= start + warm) {
                from = now;
                fromOps = ops;
            }
            if (from != 0 && now >= from + secs) {
                double ns = (double) (now - from) / (ops - fromOps);
                res = String.format("{\"ops\":%d,\"ns_per_op\":%f,\"ops_s\":%f}", ops - fromOps, ns, 1e9 / ns);
                break;
            }
        }
        ready(res);
        stdin.readLine();
        m.release();
        c.close();
        return res;
    }

    /** One turn of scenarios 3 and 8: take (blocking until ours), then give back. */
    interface Turn {
        AutoCloseable take() throws Exception;
    }

    // 3 and 8. One of several contending processes from --start-at: take a turn, note the time,
    // give it back at once; the events are (taken, giving back) on System.nanoTime().
    static String contend(CuratorFramework c, Turn turn) throws Exception {
        long start = (long) num("start-at", 0);
        long end = start + (long) (num("warmup", 1) * 1e9) + (long) (num("secs", 3) * 1e9);
        long wait = start - System.nanoTime();
        if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        StringBuilder sb = new StringBuilder("{\"events\":[");
        boolean first = true;
        long measureFrom = start + (long) (num("warmup", 1) * 1e9), c0 = -1;
        while (System.nanoTime() < end) {
            if (c0 < 0 && System.nanoTime() >= measureFrom) c0 = cpuNs();
            AutoCloseable held = turn.take();
            long taken = System.nanoTime();
            long giving = System.nanoTime();
            held.close();
            if (!first) sb.append(',');
            first = false;
            sb.append('[').append(taken).append(',').append(giving).append(']');
        }
        long cpu = c0 < 0 ? 0 : cpuNs() - c0;
        c.close();
        return sb.append("],\"cpu_s\":").append(cpu / 1e9).append("}").toString();
    }

    // 3. An InterProcessMutex: acquire, release.
    static String s3() throws Exception {
        CuratorFramework c = connect();
        InterProcessMutex m = new InterProcessMutex(c, arg("path"));
        return contend(c, () -> {
            m.acquire();
            return m::release;
        });
    }

    // 8. Election handover (issue 25): a LeaderLatch per round, as Curator's users give up
    // leadership (close() deletes the node), started again at once.
    static String s8() throws Exception {
        CuratorFramework c = connect();
        return contend(c, () -> {
            LeaderLatch latch = new LeaderLatch(c, arg("path"), "bench");
            latch.start();
            latch.await();
            return latch::close;
        });
    }

    // 4. `--locks` distinct locks cycled concurrently by as many threads over one CuratorFramework.
    static String s4() throws Exception {
        CuratorFramework c = connect();
        List<InterProcessMutex> ms = new ArrayList<>();
        for (int i = 0; i < (int) num("locks", 64); i++) ms.add(new InterProcessMutex(c, arg("path") + "/" + i));
        String out = slotted(ms);
        c.close();
        return out;
    }

    // 5. `--waiters` threads (over `--sessions` CuratorFrameworks) queue on one lock; on a stdin
    // line the holder releases and every waiter releases as soon as it holds the lock.
    static String s5() throws Exception {
        int waiters = (int) num("waiters", 1000);
        int sessions = Math.max(1, (int) num("sessions", waiters));
        String path = arg("path");
        CuratorFramework holder = connect();
        InterProcessMutex hm = new InterProcessMutex(holder, path);
        hm.acquire();
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < sessions; i++) clients.add(connect());
        Thread[] threads = new Thread[waiters];
        for (int i = 0; i < waiters; i++) {
            InterProcessMutex m = new InterProcessMutex(clients.get(i % sessions), path);
            threads[i] = new Thread(() -> {
                try {
                    m.acquire();
                    m.release();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "waiter-" + i);
            threads[i].setDaemon(true);
            threads[i].start();
        }
        while (holder.getChildren().forPath(path).size() < waiters + 1) Thread.sleep(100);
        Thread.sleep(500);
        ready(String.format("{\"queued\":%d,\"sessions\":%d,\"rss\":%d}", waiters, sessions, rss()));
        stdin.readLine();
        long t0 = System.nanoTime();
        hm.release();
        for (Thread t : threads) t.join();
        long elapsed = System.nanoTime() - t0;
        String res = String.format("{\"releases\":%d,\"handoffs_s\":%f}", waiters + 1, waiters / (elapsed / 1e9));
        ready(res); // the server's counters are read now, before the sessions close
        stdin.readLine();
        for (CuratorFramework c : clients) c.close();
        holder.close();
        return res;
    }

    // 9. The servers' bill (bench/src/s9.rs): --sessions sessions idle, then each holding a lock
    // of its own, then all waiting on one lock (the first session of the --holder process holds
    // it), each phase announced by a ready line and ended by a line on stdin.
    static String s9() throws Exception {
        int n = (int) num("sessions", 1000);
        int offset = (int) num("offset", 0);
        int sessionMs = (int) num("session-ms", 10000);
        String path = arg("path");
        long t0 = System.nanoTime();
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CuratorFramework c = CuratorFrameworkFactory.newClient(arg("servers"), sessionMs, 60_000,
                    new ExponentialBackoffRetry(100, 3));
            c.start();
            c.blockUntilConnected();
            clients.add(c);
        }
        ready(String.format("{\"phase\":\"idle\",\"sessions\":%d,\"open_s\":%f,\"rss\":%d}", n,
                (System.nanoTime() - t0) / 1e9, rss()));
        stdin.readLine();
        List<InterProcessMutex> held = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            InterProcessMutex m = new InterProcessMutex(clients.get(i), path + "/h-" + (offset + i));
            m.acquire();
            held.add(m);
        }
        ready(String.format("{\"phase\":\"hold\",\"leases\":%d,\"rss\":%d}", n, rss()));
        stdin.readLine();
        for (InterProcessMutex m : held) m.release();
        String waitPath = path + "/wait";
        int waiters = 0;
        for (int i = 0; i < n; i++) {
            InterProcessMutex m = new InterProcessMutex(clients.get(i), waitPath);
            if (i == 0 && "yes".equals(args.get("holder"))) {
                m.acquire();
                continue;
            }
            Thread t = new Thread(() -> {
                try {
                    m.acquire();
                } catch (Exception e) {
                    // closed under it at the end of the run
                }
            }, "waiter-" + i);
            t.setDaemon(true);
            t.start();
            waiters++;
        }
        ready(String.format("{\"phase\":\"wait\",\"waiters\":%d,\"rss\":%d}", waiters, rss()));
        stdin.readLine();
        long t1 = System.nanoTime();
        for (CuratorFramework c : clients) c.close();
        return String.format("{\"close_s\":%f}", (System.nanoTime() - t1) / 1e9);
    }

    // 6. RSS of this process while one thread holds `--locks` distinct locks.
    static String s6() throws Exception {
        CuratorFramework c = connect();
        int n = (int) num("locks", 10000);
        String path = arg("path");
        InterProcessMutex warm = new InterProcessMutex(c, path + "-warm");
        for (int i = 0; i < 200; i++) {
            warm.acquire();
            warm.release();
        }
        System.gc();
        Thread.sleep(200);
        long before = rss();
        List<InterProcessMutex> held = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            InterProcessMutex m = new InterProcessMutex(c, path + "/" + i);
            m.acquire();
            held.add(m);
        }
        System.gc();
        Thread.sleep(500);
        long after = rss();
        String res = String.format("{\"locks\":%d,\"mode\":\"hold\",\"rss_before\":%d,\"rss_after\":%d,\"bytes_per_lock\":%f}",
                n, before, after, (after - before) / (double) n);
        ready(res);
        stdin.readLine();
        return res;
    }

    // The cost curve (see bench/src/rust_worker.rs, zk_curve): `--depth` waiters (threads over at
    // most 16 CuratorFrameworks) behind a holder; 30 try-acquires by another session at that
    // depth; then every waiter cycles (acquire, release, queue again) for `--secs`.
    static String curve() throws Exception {
        int depth = (int) num("depth", 10);
        long secs = (long) (num("secs", 2) * 1e9);
        String path = arg("path");
        CuratorFramework holder = connect();
        InterProcessMutex hm = new InterProcessMutex(holder, path);
        hm.acquire();
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < Math.max(1, Math.min(depth, 16)); i++) clients.add(connect());
        AtomicBoolean stop = new AtomicBoolean(false);
        List<long[]> events = new ArrayList<>();
        for (int i = 0; i < depth; i++) {
            InterProcessMutex m = new InterProcessMutex(clients.get(i % clients.size()), path);
            Thread t = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        m.acquire();
                        long acquired = System.nanoTime();
                        long releasing = System.nanoTime();
                        m.release();
                        synchronized (events) {
                            events.add(new long[] {acquired, releasing});
                        }
                    }
                } catch (Exception e) {
                    // the sessions closed under a waiting thread: the run is over
                }
            });
            t.setDaemon(true);
            t.start();
        }
        CuratorFramework probe = connect();
        while (probe.getChildren().forPath(path).size() < depth + 1) Thread.sleep(50);
        Thread.sleep(300);
        InterProcessMutex pm = new InterProcessMutex(probe, path);
        long[] tries = new long[30];
        for (int i = -10; i < tries.length; i++) { // the first 10 warm up
            long t0 = System.nanoTime();
            if (pm.acquire(0, TimeUnit.MILLISECONDS)) throw new IllegalStateException("try-acquire got a held lock");
            if (i >= 0) tries[i] = System.nanoTime() - t0;
        }
        Arrays.sort(tries);
        ready(String.format("{\"depth\":%d,\"try_p50_us\":%f,\"rss\":%d}", depth, pct(tries, 50) / 1000.0, rss()));
        stdin.readLine();
        long t0 = System.nanoTime(), c0 = cpuNs();
        long releasing = System.nanoTime();
        hm.release();
        sleepUntil(t0 + secs);
        stop.set(true);
        long cpu = cpuNs() - c0;
        StringBuilder sb = new StringBuilder("{\"depth\":").append(depth).append(",\"window_s\":")
                .append((System.nanoTime() - t0) / 1e9).append(",\"cpu_s\":").append(cpu / 1e9)
                .append(",\"events\":[[").append(t0).append(',').append(releasing).append(']');
        synchronized (events) {
            for (long[] e : events) sb.append(",[").append(e[0]).append(',').append(e[1]).append(']');
        }
        String res = sb.append("]}").toString();
        ready(res);
        stdin.readLine();
        for (CuratorFramework c : clients) c.close();
        probe.close();
        holder.close();
        System.exit(0);
        return res;
    }
}
