// Per-device reading numbers that never go back, across gateway restarts and crashes.
#if canImport(Glibc)
import Glibc
#endif

/// The `seq` of each device's readings: 1, 2, 3 ... per device, kept in a file.
///
/// A number is never given twice: the file holds, per device, a number no reading has had
/// yet, written (atomically) before any reading reaches it, in steps of `reserve`. A clean
/// stop writes the exact next numbers (``close()``), so the sequence goes on without a gap;
/// after a crash it goes on from the reservation, with a gap but never a repeat.
public final class SequenceStore {
    /// The file the numbers are kept in.
    public let path: String
    let directory: String
    let reserve: UInt64
    /// Per device: the next number, and the first number the file does not cover.
    private var next: [String: (next: UInt64, limit: UInt64)] = [:]

    /// Loads `path` (missing: every device starts at 1).
    public init(path: String, reserve: UInt64 = 1000) {
        self.path = path
        self.reserve = reserve
        directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        guard let bytes = Spool.readFile(path), let text = String(validating: bytes, as: UTF8.self) else { return }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let n = UInt64(parts[1]), n > 0 else { continue }
            next[String(parts[0])] = (n, n)
        }
    }

    /// The number of `device`'s next reading.
    public func take(_ device: String) throws(SpoolError) -> UInt64 {
        var entry = next[device] ?? (1, 1)
        if entry.next >= entry.limit {
            let before = next[device]
            entry.limit = entry.next + reserve
            next[device] = entry
            do throws(SpoolError) {
                try save(exact: false)
            } catch {
                // The file does not cover the new numbers: give none of them out.
                next[device] = before
                throw error
            }
        }
        let n = entry.next
        entry.next += 1
        next[device] = entry
        return n
    }

    /// Writes the exact next numbers (a clean stop).
    public func close() throws(SpoolError) {
        try save(exact: true)
        for (k, v) in next { next[k] = (v.next, v.next) }
    }

    private func save(exact: Bool) throws(SpoolError) {
        var text = ""
        for (device, entry) in next.sorted(by: { $0.key < $1.key }) {
            text += "\(device) \(exact ? entry.next : entry.limit)\n"
        }
        try Spool.writeAtomically(Array(text.utf8), to: path, in: directory.isEmpty ? "." : directory)
    }
}

/// Wall-clock time as ISO 8601 UTC with milliseconds: 2026-12-02T08:30:00.123Z.
public enum GatewayClock {
    /// Now, in milliseconds since 1970.
    public static func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// `milliseconds` since 1970 as ISO 8601 UTC.
    public static func iso8601(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        let ms = Int(milliseconds % 1000)
        var t = tm()
        gmtime_r(&seconds, &t)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(t.tm_year + 1900, 4))-\(pad(t.tm_mon + 1, 2))-\(pad(t.tm_mday, 2))T\(pad(t.tm_hour, 2)):"
            + "\(pad(t.tm_min, 2)):\(pad(t.tm_sec, 2)).\(pad(Int32(ms), 3))Z"
    }
}
