// Curator's shared counters for zklock's counter interop test (issue 37, point 5):
//
//   java CuratorCounter SERVERS PATH shared get     SharedCount(PATH, seed 0): prints the count
//   java CuratorCounter SERVERS PATH shared add N   trySetCount(version read, count + N) until it
//                                                   takes; prints the new count
//   java CuratorCounter SERVERS PATH long get       DistributedAtomicLong(PATH).get(): prints it
//   java CuratorCounter SERVERS PATH long add N     DistributedAtomicLong.add(N): prints the new
//                                                   count (exit 1 when it did not succeed)
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public class CuratorCounter {
    public static void main(String[] args) throws Exception {
        String servers = args[0], path = args[1], kind = args[2], op = args[3];
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(servers).sessionTimeoutMs(10000).connectionTimeoutMs(10000)
            .retryPolicy(new ExponentialBackoffRetry(50, 10)).build();
        client.start();
        client.blockUntilConnected();
        long result;
        if (kind.equals("shared")) {
            SharedCount count = new SharedCount(client, path, 0);
            count.start();
            if (op.equals("add")) {
                int n = Integer.parseInt(args[4]);
                while (true) {
                    VersionedValue<Integer> seen = count.getVersionedValue();
                    if (count.trySetCount(seen, seen.getValue() + n)) break;
                }
            }
            result = count.getCount();
            count.close();
        } else {
            DistributedAtomicLong value = new DistributedAtomicLong(client, path, new RetryNTimes(20, 10));
            AtomicValue<Long> r = op.equals("add") ? value.add(Long.parseLong(args[4])) : value.get();
            if (!r.succeeded()) {
                System.exit(1);
            }
            result = r.postValue();
        }
        System.out.println(result);
        System.out.flush();
        client.close();
    }
}
