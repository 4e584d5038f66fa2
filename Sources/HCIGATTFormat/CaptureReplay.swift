import BluetoothHost
import BluetoothSecurity
import BluetoothWire

/// Replays the records of a btsnoop capture into lines of output, sans I/O: the caller
/// reads the file and writes ``writer``'s buffer out when it is full enough. Shared by
/// `hcigatt replay` and the benchmarks, so both measure the same thing.
///
/// Scan mode (the default) runs the advertising reports through the same ``Scanner`` as a
/// live scan; one device table serves the whole capture, however often scanning was
/// switched on and off, and a device is new once per capture. Packet mode
/// (``packets``) describes every packet, down to ATT, SMP and L2CAP signaling. With
/// `defersLines`, scan results are kept for the caller to format elsewhere (`hcigatt
/// replay` formats them on a second thread) instead of written to ``writer``.
public struct CaptureReplay: ~Copyable {
    /// Where the lines go.
    public var writer: FieldWriter
    /// Packets read.
    public private(set) var packets = 0
    /// HCI events received.
    public private(set) var events = 0
    /// Advertising reports fed to the scanner.
    public private(set) var reports = 0
    /// Packets that did not parse (or parsed only in part).
    public private(set) var malformed = 0

    private let packetMode: Bool
    private var configuration: ScanConfiguration
    private let forcePassive: Bool
    /// Made at the first report, with the scan type recorded before it.
    private var scanner: Scanner
    private var scanning = false
    private var printer: ScanFormatter
    private var scanEvents: [ScanEvent] = []
    // Every device shown, so one is "new" once per capture even when the scanner's bounded
    // table forgot it.
    private var shown = AddressSet()
    private var firstTimestamp: Int64?
    /// Bonded peers' IRKs: a device advertising from a resolvable private address is shown
    /// with its identity, as the live scan shows it (answers cached per address). Scan
    /// results only: `--packets` shows addresses as sent.
    private var resolver: AddressResolver
    /// Packet mode: the attribute types learned from the capture's GATT discovery (boxed:
    /// the replay's own layout stays small).
    private let gatt = Box(CaptureGATTMap())
    /// ACL packets of whole ATT PDUs are written straight (false: all through the
    /// dissector's tree, the reference the tests compare the direct path with).
    var directATTPackets = true
    /// Packets written by the direct ATT path.
    private(set) var directATTWritten = 0
    /// LE Advertising Report events are written straight (false: through the events'
    /// descriptions, the reference the tests compare the direct path with).
    var directAdvertisingPackets = true
    /// Events written by the direct advertising report path.
    private(set) var directAdvertisingWritten = 0
    /// The direct advertising report path (its company names cached).
    private var advertisingPacket = AdvertisingReportPacket()
    /// Scan mode: the devices to show are kept in ``pendingLines`` for the caller to
    /// format (on another thread: ``ScanLine``), not written to ``writer``.
    private let defersLines: Bool
    private var pendingLines: [ScanLine] = []
    /// The places in ``pendingLines`` of devices the scanner discovered: whether each is
    /// new to the replay (not shown before the scanner forgot it) is settled when the lines
    /// are taken, all together. Each is a lookup in the set of every address shown, a cache
    /// miss in a crowd: one at a time, between reports, each stalls; back to back the
    /// processor overlaps them.
    private var discoveredLines: [Int] = []
    private var devicesShown = 0
    private var linesShown = 0

    /// A replay printing JSON Lines or text; `packets` for every packet instead of the
    /// scan results; `forcePassive` ignores the recorded scan type (`--passive`).
    /// `resolving`: the IRKs of bonded peers (``BondStore/resolvingEntries()``).
    /// `defersLines`: scan results are kept for ``takeLines(_:)`` instead of written.
    public init(configuration: ScanConfiguration, json: Bool, packets: Bool, forcePassive: Bool = false,
                bufferCapacity: Int = 1 << 16, resolving: [AddressResolver.Entry] = [], defersLines: Bool = false) {
        self.defersLines = defersLines && !packets
        self.resolver = AddressResolver(resolving)
        var c = configuration
        // Nothing is forgotten for being unheard a while: a phone's capture has long gaps.
        c.deviceTimeout = .seconds(100 * 365 * 86_400)
        self.configuration = c
        self.packetMode = packets
        self.forcePassive = forcePassive
        self.printer = Self.formatter(json: json)
        self.scanner = Scanner(configuration: c, extended: false)
        self.writer = FieldWriter(format: json ? .json : .text, out: OutputBuffer(capacity: bufferCapacity))
        scanEvents.reserveCapacity(16)
    }

    /// Distinct devices shown (with deferred lines: in the lines taken).
    public var devices: Int { devicesShown }
    /// Lines for devices (new and updated), written or deferred.
    public var lines: Int { linesShown }
    /// Deferred lines not taken yet.
    public var pendingLineCount: Int { pendingLines.count }

    /// A formatter for the deferred lines: the one this replay would write them with.
    public func lineFormatter() -> ScanFormatter { Self.formatter(json: writer.format == .json) }

    /// The scan lines' formatter: the replay's own and the one for its deferred lines.
    private static func formatter(json: Bool) -> ScanFormatter { ScanFormatter(json: json, origin: 0) }

    /// Moves the deferred lines into `lines` (emptied first; its storage is kept and this
    /// replay's is handed over, so batches passed back and forth allocate nothing).
    public mutating func takeLines(_ lines: inout [ScanLine]) {
        for i in discoveredLines {
            let isNew = shown.insert(pendingLines[i].device.address)
            pendingLines[i].isNew = isNew
            if isNew { devicesShown &+= 1 }
        }
        discoveredLines.removeAll(keepingCapacity: true)
        lines.removeAll(keepingCapacity: true)
        swap(&lines, &pendingLines)
    }

    /// One record of the capture.
    public mutating func record(_ record: BTSnoopRecord) {
        packets &+= 1
        let first = firstTimestamp ?? record.timestamp
        firstTimestamp = first
        let now = UInt64(max(0, record.timestamp &- first)) &* 1000
        if packetMode {
            packet(record, now: now)
            return
        }
        guard let type = record.data.first.map(H4PacketType.init(rawValue:)) else { malformed &+= 1; return }
        let packet = UnsafeRawBufferPointer(rebasing: record.data.dropFirst())
        if !record.flags.isReceived {
            // The recorded scan parameters say whether the scan was active.
            if type == .command, !forcePassive, let active = Self.scanIsActive(packet) { configuration.active = active }
            return
        }
        guard type == .event else { return }
        events &+= 1
        do throws(WireError) {
            // LE Advertising Reports, most of a scan's capture, straight from the packet
            // (the same checks and errors); any other event through HCIEvent.
            if let e = try HCIEvent.advertisingReport(parsing: packet) {
                let before = beginScanning(now: now)
                scanner.handle(e, now: now, into: &scanEvents)
                endScanning(since: before)
                return
            }
            guard case .leMeta(let meta) = try HCIEvent(parsing: packet) else { return }
            switch meta {
            case .advertisingReport, .extendedAdvertisingReport: break
            default: return
            }
            let before = beginScanning(now: now)
            scanner.handle(meta, now: now, into: &scanEvents)
            endScanning(since: before)
        } catch {
            malformed &+= 1
        }
    }

    /// Before an advertising report event: the scanner made, its timers run; returns its
    /// report count.
    private mutating func beginScanning(now: UInt64) -> Int {
        if !scanning {
            scanner = Scanner(configuration: configuration, extended: false)
            scanning = true
        }
        if let d = scanner.nextDeadline, d <= now {
            scanEvents += scanner.timerFired(now: now)
            emit()
        }
        return scanner.statistics.reports
    }

    /// After it: its devices shown, its reports counted.
    private mutating func endScanning(since before: Int) {
        emit()
        reports &+= scanner.statistics.reports &- before
    }

    /// The end of the capture: devices still held for a scan response are shown.
    public mutating func finish() {
        if scanning { scanEvents += scanner.flush() }
        emit()
    }

    private mutating func emit() {
        guard !scanEvents.isEmpty else { return }
        // Each event moved out of the list (reversed, then popped: nearly always one), not
        // copied and then cleared: no retain and release of its data, no clearing pass.
        scanEvents.reverse()
        while let e = scanEvents.popLast() {
            // Discovered: new to the scanner, and new to the replay unless shown before the
            // scanner forgot it. Updated: discovered first, so shown (and in `shown`).
            var d: DiscoveredDevice
            let discovered: Bool
            switch consume e {
            case .discovered(let device): d = device; discovered = true
            case .updated(let device): d = device; discovered = false
            }
            if let id = Self.identity(of: d.address, &resolver) { d.identity = id }
            linesShown &+= 1
            if defersLines {
                // Settled in takeLines.
                if discovered { discoveredLines.append(pendingLines.count) }
                pendingLines.append(ScanLine(device: consume d, isNew: discovered))
            } else {
                let isNew = discovered && shown.insert(d.address)
                if isNew { devicesShown &+= 1 }
                printer.write(d, isNew: isNew, into: &writer)
            }
        }
    }

    /// The identity behind `address`, as the live scan finds it: an address the controller
    /// resolved itself (Public/Random Identity Address types), else a bonded IRK's.
    static func identity(of address: LEAddress, _ resolver: inout AddressResolver) -> LEAddress? {
        switch address.type {
        case .publicIdentity: LEAddress(address.address, type: .public)
        case .randomIdentity: LEAddress(address.address, type: .random)
        default: resolver.resolve(address)
        }
    }

    /// For LE Set (Extended) Scan Parameters: whether scanning is active.
    static func scanIsActive(_ packet: UnsafeRawBufferPointer) -> Bool? {
        do throws(WireError) {
            switch try HCICommand(parsing: packet) {
            case .leSetScanParameters(let c): return c.scanType == .active
            case .leSetExtendedScanParameters(let c): return (c.le1M ?? c.leCoded)?.scanType == .active
            default: return nil
            }
        } catch {
            return nil
        }
    }

    /// One packet: time, direction and its layers (a text block or one JSON line).
    private mutating func packet(_ record: BTSnoopRecord, now: UInt64) {
        let received = record.flags.isReceived
        // Events (most of a capture: advertising reports) are described straight from the
        // parsed view; the other packets through the dissector's field tree.
        // (The frame is checked first, so a bad length reads as the dissector says it.)
        if record.data.first == H4PacketType.event.rawValue, let frame = try? H4Frame.parse(record.data) {
            do throws(WireError) {
                let event = try HCIEvent(parsing: frame.packet)
                if directAdvertisingPackets, case .leMeta(.advertisingReport(let e)) = event {
                    advertisingPacket.write(e, received: received, now: now, into: &writer)
                    directAdvertisingWritten &+= 1
                    return
                }
                gatt.value.event(event)
                header(title: event.fieldTitle, received: received, now: now)
                event.describe(into: &writer)
                writer.endRecord()
            } catch {
                malformedPacket(record, WireError(error.code, at: error.offset &+ 1, error.reason), received: received, now: now)
            }
            return
        }
        if directATTPackets, record.data.first == H4PacketType.acl.rawValue, directATT(record, received: received, now: now) { return }
        do throws(WireError) {
            let d = try Dissector.h4(record.data)
            if d.error != nil { malformed &+= 1 }
            header(title: d.title, received: received, now: now)
            var fields = d.fields
            if d.error == nil, let (connection, pdu) = CaptureGATTMap.attPDU(record.data) {
                // The attribute's type and decoded value, from the discovery seen before.
                let extra = gatt.value.att(connection: connection, sentByHost: !received, pdu: pdu)
                if !extra.isEmpty { Self.appendToATT(extra, in: &fields) }
            }
            writer.fields(fields)
            writer.endRecord()
        } catch {
            malformedPacket(record, error, received: received, now: now)
        }
    }

    /// An ACL packet carrying a whole ATT PDU (nearly every packet of a connection),
    /// written straight: the dissector's layers and fields, without building its tree.
    /// False, having written nothing, for anything else (fragments, other channels,
    /// malformed PDUs), which the dissector describes.
    private mutating func directATT(_ record: BTSnoopRecord, received: Bool, now: UInt64) -> Bool {
        let packet = UnsafeRawBufferPointer(rebasing: record.data.dropFirst())
        guard let acl = try? ACLPacket(parsing: packet), acl.header.packetBoundary.isFirst,
              let frame = try? L2CAPBasicFrame(parsing: acl.payload), frame.channelID == .att,
              let pdu = try? ATTPDU(parsing: frame.payload) else { return false }
        header(title: acl.fieldTitle, received: received, now: now)
        let h = acl.header
        writer.uint("handle", UInt64(h.handle))
        writer.named("packet_boundary_flag", UInt64(h.packetBoundary.rawValue), h.packetBoundary.description)
        writer.named("broadcast_flag", UInt64(h.broadcast.rawValue), h.broadcast.description)
        writer.uint("data_total_length", UInt64(h.dataLength))
        writer.beginObject("l2cap")
        writer.uint("length", UInt64(frame.payload.count))
        writer.named("channel_id", UInt64(frame.channelID.rawValue), literal: "ATT")
        writer.beginObject("att")
        writer.text("pdu", pdu.fieldTitle)
        pdu.describe(into: &writer)
        // The attribute's type and decoded value, from the discovery seen before: for the
        // packets the map reads (its own test, so both paths learn from the same ones).
        if let (connection, att) = CaptureGATTMap.attPDU(record.data) {
            writer.fields(gatt.value.att(connection: connection, sentByHost: !received, pdu: att))
        }
        writer.end()
        writer.end()
        writer.endRecord()
        directATTWritten &+= 1
        return true
    }

    /// Adds `extra` at the end of the ACL packet's `l2cap` → `att` object.
    static func appendToATT(_ extra: [Field], in fields: inout [Field]) {
        guard let l = fields.firstIndex(where: { $0.name == "l2cap" }), case .object(var l2cap) = fields[l].value,
              let a = l2cap.firstIndex(where: { $0.name == "att" }), case .object(var att) = l2cap[a].value else { return }
        att += extra
        l2cap[a].value = .object(att)
        fields[l].value = .object(l2cap)
    }

    /// Starts a packet's record: JSON `type`, `name`, `time` and `direction`, or the text
    /// line "TIME < TITLE".
    private mutating func header(title: String, received: Bool, now: UInt64) {
        if writer.format == .json {
            writer.beginRecord(type: "h4", title: title)
            writer.seconds("time", nanoseconds: now)
            if received { writer.text("direction", literal: "received") } else { writer.text("direction", literal: "sent") }
        } else {
            Self.seconds(now, into: &writer.out)
            if received { writer.out.raw(" < ") } else { writer.out.raw(" > ") }
            writer.out.utf8(title)
            writer.beginRecord()
        }
    }

    /// A packet that does not parse: one text line in either format.
    private mutating func malformedPacket(_ record: BTSnoopRecord, _ error: WireError, received: Bool, now: UInt64) {
        malformed &+= 1
        Self.seconds(now, into: &writer.out)
        writer.out.raw(received ? " < malformed packet: " : " > malformed packet: ")
        writer.out.utf8(error.description)
        writer.out.raw(" [")
        writer.out.hexLower(record.data, separator: UInt8(ascii: " "))
        writer.out.raw("]\n")
    }

    /// Seconds with one decimal ("12.3"), rounded as the CLI always did (in floating
    /// point: a time exactly between two tenths goes where the product lands).
    static func seconds(_ nanoseconds: UInt64, into out: inout OutputBuffer) {
        let tenths = UInt64(max(0, (Double(nanoseconds) / 1e9 * 10).rounded()))
        out.decimal(tenths / 10)
        out.byte(UInt8(ascii: "."))
        out.decimal(tenths % 10)
    }
}

/// A scan result to format: the device as shown (its identity resolved) and whether it is
/// new. ``ScanFormatter/write(_:isNew:into:)`` makes the line, on any thread.
public struct ScanLine: Sendable {
    /// The device, its identity filled in when resolved.
    public var device: DiscoveredDevice
    /// The first line for this device (`NEW`, `"event":"new"`).
    public var isNew: Bool
    /// A line to format.
    public init(device: DiscoveredDevice, isNew: Bool) {
        self.device = device
        self.isNew = isNew
    }
}

/// A value behind a reference, mutated in place.
final class Box<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}
