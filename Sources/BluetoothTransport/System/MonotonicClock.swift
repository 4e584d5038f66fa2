import Glibc

/// The stack's one clock: CLOCK_MONOTONIC in nanoseconds (not set back by NTP or the
/// user), for every deadline, timeout and age from the host driver up to the CLI.
@inline(__always)
public func monotonicNow() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}
