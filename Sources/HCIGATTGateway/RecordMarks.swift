// Per-device record positions: which stored records (RACP) the gateway has published.
import BluetoothWire
import Synchronization

/// The newest stored-record sequence number published per device, kept in a file beside
/// the sequence store (`<spool>/records`, one `DEVICE SEQ` line per device) so a restarted
/// gateway asks only for newer records. Written atomically once a record is in the spool:
/// a crash between the two can publish that one record again, never lose one.
public final class RecordMarks: Sendable {
    /// A record's place, carried by its reading to the runtime.
    public struct Mark: Sendable, Hashable {
        /// The device (its topic level).
        public var device: BluetoothAddress
        /// The record's sequence number.
        public var sequenceNumber: UInt16
        /// The device's numbering started again (it was reset): this mark replaces the one
        /// kept; otherwise a mark only moves forward (past 65535 to 0 included).
        public var restarts: Bool

        /// A mark.
        public init(device: BluetoothAddress, sequenceNumber: UInt16, restarts: Bool = false) {
            self.device = device
            self.sequenceNumber = sequenceNumber
            self.restarts = restarts
        }
    }

    /// The file.
    public let path: String
    private let directory: String
    private let marks: Mutex<[BluetoothAddress: UInt16]>

    /// Loads `path` (missing or unreadable lines: those devices start from their first record).
    public init(path: String) {
        self.path = path
        directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        var loaded: [BluetoothAddress: UInt16] = [:]
        if let bytes = Spool.readFile(path), let text = String(validating: bytes, as: UTF8.self) {
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let device = GatewayNaming.device(level: String(parts[0])),
                      let n = UInt16(parts[1]) else { continue }
                loaded[device] = n
            }
        }
        marks = Mutex(loaded)
    }

    /// Whether sequence number `n` comes after `m`: record numbers wrap (65535, then 0), so
    /// `n` is after when it is less than half the number space ahead.
    public static func isAfter(_ n: UInt16, _ m: UInt16) -> Bool {
        let d = n &- m
        return d != 0 && d < 0x8000
    }

    /// The newest sequence number of `device`'s records published (nil: none yet).
    public func mark(of device: BluetoothAddress) -> UInt16? { marks.withLock { $0[device] } }

    /// A record is in the spool: keep its place (and write the file when it moved).
    public func published(_ m: Mark) throws(SpoolError) {
        let text: String? = marks.withLock { marks in
            let old = marks[m.device]
            guard m.restarts || old.map({ Self.isAfter(m.sequenceNumber, $0) }) ?? true, old != m.sequenceNumber else { return nil }
            marks[m.device] = m.sequenceNumber
            return marks.sorted { $0.key.rawValue < $1.key.rawValue }
                .map { "\(GatewayNaming.deviceLevel($0.key)) \($0.value)\n" }.joined()
        }
        guard let text else { return }
        try Spool.writeAtomically(Array(text.utf8), to: path, in: directory.isEmpty ? "." : directory)
    }
}
