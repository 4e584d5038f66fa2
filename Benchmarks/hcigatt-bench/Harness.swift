import CAllocCounter
#if canImport(Glibc)
import Glibc
#endif

/// A micro-benchmark: `run(n)` performs the operation n times and returns a checksum
/// that depends on every result, so the optimizer cannot drop the work.
struct BenchmarkCase {
    var name: String
    /// Target ns/op from the issue, for the report (nil = no target).
    var targetNanos: Double?
    /// Items (e.g. advertising reports) one operation processes; figures are per item.
    var itemsPerOp: Int = 1
    /// Formatting output allocates by nature; such cases are reported, not failed by --check.
    var allowsAllocations = false
    /// For such a case, the most allocations per item --check accepts (nil: any).
    var maxAllocationsPerItem: Double? = nil
    var run: (Int) -> UInt64
}

struct Measurement {
    var name: String
    var medianNanos: Double
    var minNanos: Double
    var opsPerSecond: Double
    var allocationsPerOp: Double
    var targetNanos: Double?
    var iterations: Int
    var allowsAllocations: Bool
    var maxAllocationsPerItem: Double?

    var meetsTarget: Bool {
        guard let t = targetNanos else { return true }
        return medianNanos <= t
    }
}

@inline(__always)
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Sink for checksums: printed only if impossible, but the compiler cannot know that.
nonisolated(unsafe) var checksumSink: UInt64 = 0

struct Harness {
    var repetitions = 15
    /// Each repetition runs for about this long.
    var targetRepetitionNanos: UInt64 = 20_000_000

    func measure(_ c: BenchmarkCase) -> Measurement {
        // Warm-up and calibration: grow n until one batch takes long enough.
        var n = 1
        while true {
            let t0 = monotonicNanos()
            checksumSink &+= c.run(n)
            let dt = monotonicNanos() &- t0
            if dt >= targetRepetitionNanos / 4 || n >= 1 << 30 { break }
            n *= 2
        }
        n = max(1, n * 4)
        var samples: [Double] = []
        samples.reserveCapacity(repetitions)
        // Allocation count over one separate batch, so the sample array above is not counted.
        let a0 = alloc_counter_total()
        checksumSink &+= c.run(n)
        let a1 = alloc_counter_total()
        for _ in 0 ..< repetitions {
            let t0 = monotonicNanos()
            checksumSink &+= c.run(n)
            let dt = monotonicNanos() &- t0
            samples.append(Double(dt) / Double(n))
        }
        samples.sort()
        let items = Double(max(c.itemsPerOp, 1))
        let median = samples[samples.count / 2] / items
        return Measurement(
            name: c.name,
            medianNanos: median,
            minNanos: samples[0] / items,
            opsPerSecond: 1e9 / median,
            allocationsPerOp: Double(a1 &- a0) / Double(n) / items,
            targetNanos: c.targetNanos,
            iterations: n,
            allowsAllocations: c.allowsAllocations,
            maxAllocationsPerItem: c.maxAllocationsPerItem
        )
    }
}

/// Eight copies of a benchmark input; `run` parses a different copy each iteration, so the
/// optimizer cannot hoist the work out of the loop as loop-invariant (a call barrier would
/// cost more than the cheapest cases themselves). Built once, outside the timed loop.
final class RotatingInput {
    /// 64-byte aligned, each copy starting on a cache line: the same layout every run, so
    /// results do not jump with where malloc happened to put the buffer.
    let storage: UnsafeMutableRawBufferPointer
    let stride: Int
    let count: Int

    init(_ input: [UInt8]) {
        count = input.count
        stride = (input.count + 63) & ~63
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: stride * 8, alignment: 64)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        for k in 0 ..< 8 {
            input.withUnsafeBytes { src in
                UnsafeMutableRawBufferPointer(rebasing: storage[k * stride ..< k * stride + input.count]).copyMemory(from: src)
            }
        }
    }

    deinit { storage.deallocate() }

    @inline(__always)
    func run(_ n: Int, _ body: (UnsafeRawBufferPointer) -> UInt64) -> UInt64 {
        let all = UnsafeRawBufferPointer(storage)
        var sum: UInt64 = 0
        for i in 0 ..< n {
            let start = (i & 7) &* stride
            sum &+= body(UnsafeRawBufferPointer(rebasing: all[start ..< start &+ count]))
        }
        return sum
    }
}

func formatFixed(_ v: Double, _ decimals: Int) -> String {
    var scale = 1.0
    for _ in 0 ..< decimals { scale *= 10 }
    let r = (v * scale).rounded() / scale
    if decimals == 0, let i = Int(exactly: r) { return String(i) }
    var s = String(r)
    if let dot = s.firstIndex(of: ".") {
        let fraction = s[s.index(after: dot)...]
        if fraction.count < decimals { s += String(repeating: "0", count: decimals - fraction.count) }
    } else if decimals > 0 {
        s += "." + String(repeating: "0", count: decimals)
    }
    return s
}

func pad(_ s: String, _ w: Int, right: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, w - s.count))
    return right ? fill + s : s + fill
}

func tableReport(_ ms: [Measurement]) -> String {
    var out = pad("case", 34) + pad("median ns", 11, right: true) + pad("min ns", 10, right: true)
        + pad("ops/s", 14, right: true) + pad("allocs/op", 11, right: true) + pad("target", 12, right: true) + "\n"
    out += String(repeating: "-", count: 90) + "\n"
    for m in ms {
        let target = m.targetNanos.map { "≤" + formatFixed($0, 0) + (m.meetsTarget ? " ok" : " MISS") } ?? "-"
        out += pad(m.name, 34)
            + pad(formatFixed(m.medianNanos, 2), 11, right: true)
            + pad(formatFixed(m.minNanos, 2), 10, right: true)
            + pad(String(Int(min(m.opsPerSecond, 1e15))), 14, right: true)
            + pad(formatFixed(m.allocationsPerOp, 2), 11, right: true)
            + pad(target, 12, right: true) + "\n"
    }
    return out
}

func jsonReport(_ ms: [Measurement]) -> String {
    var out = "[\n"
    for (i, m) in ms.enumerated() {
        out += "  {\"case\": \"\(m.name)\", \"median_ns\": \(formatFixed(m.medianNanos, 3)), \"min_ns\": \(formatFixed(m.minNanos, 3)), "
        out += "\"ops_per_s\": \(formatFixed(m.opsPerSecond, 0)), \"allocations_per_op\": \(formatFixed(m.allocationsPerOp, 4)), "
        out += "\"target_ns\": \(m.targetNanos.map { formatFixed($0, 0) } ?? "null"), \"iterations\": \(m.iterations)}"
        out += i == ms.count - 1 ? "\n" : ",\n"
    }
    out += "]\n"
    return out
}
