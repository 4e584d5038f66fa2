// Per-device record positions: which stored records (RACP) the gateway has published.
import BluetoothLE
import BluetoothWire
import Synchronization

/// The newest stored record published per device (its sequence number and measurement
/// time: ``RecordPosition``), kept in a file beside the sequence store (`<spool>/records`,
/// one `DEVICE SEQ [SECONDS]` line per device) so a restarted gateway asks only for newer
/// records, and tells a meter that was reset from one that was not. Written atomically once
/// a record is in the spool: a crash between the two can publish that one record again,
/// never lose one.
public final class RecordMarks: Sendable {
    /// A record's place, carried by its reading to the runtime.
    public struct Mark: Sendable, Hashable {
        /// The device (its topic level).
        public var device: BluetoothAddress
        /// The record's sequence number.
        public var sequenceNumber: UInt16
        /// The record's measurement time (seconds since 1970), when it has one.
        public var time: Int64?
        /// The device's numbering started again (it was reset): this mark replaces the one
        /// kept; otherwise a mark only moves forward (past 65535 to 0 included).
        public var restarts: Bool

        /// A mark.
        public init(device: BluetoothAddress, sequenceNumber: UInt16, time: Int64? = nil, restarts: Bool = false) {
            self.device = device
            self.sequenceNumber = sequenceNumber
            self.time = time
            self.restarts = restarts
        }
    }

    /// The file.
    public let path: String
    private let directory: String
    private let marks: Mutex<[BluetoothAddress: RecordPosition]>

    /// Loads `path` (missing or unreadable lines: those devices start from their first record).
    public init(path: String) {
        self.path = path
        directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        var loaded: [BluetoothAddress: RecordPosition] = [:]
        if let bytes = Spool.readFile(path), let text = String(validating: bytes, as: UTF8.self) {
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ")
                guard parts.count == 2 || parts.count == 3, let device = GatewayNaming.device(level: String(parts[0])),
                      let n = UInt16(parts[1]) else { continue }
                // A time that does not parse: the number alone (as files before times were kept).
                loaded[device] = RecordPosition(sequenceNumber: n, time: parts.count == 3 ? Int64(parts[2]) : nil)
            }
        }
        marks = Mutex(loaded)
    }

    /// The newest of `device`'s records published (nil: none yet).
    public func mark(of device: BluetoothAddress) -> RecordPosition? { marks.withLock { $0[device] } }

    /// A record is in the spool: keep its place (and write the file when it moved).
    public func published(_ m: Mark) throws(SpoolError) {
        let text: String? = marks.withLock { marks in
            let old = marks[m.device]
            let new = RecordPosition(sequenceNumber: m.sequenceNumber, time: m.time)
            guard m.restarts || old.map({ RecordPosition.isAfter(m.sequenceNumber, $0.sequenceNumber) }) ?? true, old != new else { return nil }
            marks[m.device] = new
            return marks.sorted { $0.key.rawValue < $1.key.rawValue }
                .map { "\(GatewayNaming.deviceLevel($0.key)) \($0.value.sequenceNumber)\($0.value.time.map { " \($0)" } ?? "")\n" }.joined()
        }
        guard let text else { return }
        try Spool.writeAtomically(Array(text.utf8), to: path, in: directory.isEmpty ? "." : directory)
    }
}
