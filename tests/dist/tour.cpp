// The C++ face's tour, as the clean-room test (tests/dist/test-dist.sh) builds it against the
// installed Debian package: `c++ -std=c++17 tour.cpp $(pkg-config --cflags --libs zklock)`.
#include <cstdlib>
#include <iostream>
#include <zklock.hpp>

int main() {
    const char *env = std::getenv("ZKLOCK_SERVERS");
    try {
        zklock::client client(env ? env : "127.0.0.1:2181");
        zklock::lock mutex = client.mutex("/zklock-tour/cpp");
        {
            zklock::lease lease = mutex.acquire();  // released at the end of the block
            std::cout << "c++ holds the lock, fencing token " << lease.token() << ", libzklock "
                      << zklock_version() << std::endl;
        }
        if (auto lease = mutex.try_acquire()) std::cout << "and again, token " << lease->token() << std::endl;
    } catch (const zklock::error &e) {
        std::cerr << "zklock: " << e.what() << std::endl;
        return 1;
    }
    return 0;
}
