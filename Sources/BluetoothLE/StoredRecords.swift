import BluetoothGATT
import BluetoothProfiles
import BluetoothWire
import Synchronization

/// A sensor's stored records served behind a Record Access Control Point (0x2A52) on a
/// ``GATTServer``: what glucose meters, CGMs and pulse oximeters keep while no collector is
/// near. One ``RACPServer`` procedure per client; records go out on their characteristics
/// (notified, or indicated where the client subscribed to indications) before the one RACP
/// answer, and a report runs on its own task so an Abort is seen between records; a record
/// that cannot go ends the report with Procedure Not Completed.
///
/// Use: put ``writeHandler`` on the RACP characteristic, call ``attach(to:)`` once the
/// server exists, and pass every server event to ``handle(_:on:)`` (a control point write
/// starts its procedure at its `.wrote` event).
public final class StoredRecords: Sendable {
    /// One value that carries a record, on the characteristic `uuid` of the record service.
    public struct Value: Sendable, Hashable {
        /// The characteristic (2A18 Glucose Measurement, 2A34 its context...).
        public var uuid: BluetoothUUID
        /// The encoded value.
        public var bytes: [UInt8]
        /// A value for the characteristic `uuid`.
        public init(_ uuid: BluetoothUUID, _ bytes: [UInt8]) {
            self.uuid = uuid
            self.bytes = bytes
        }
    }

    /// A stored record: its sequence number and its values, sent in order (a glucose
    /// reading's measurement, then its context).
    public struct Record: Sendable, Hashable {
        /// The record's sequence number (what RACP filters select).
        public var sequenceNumber: UInt16
        /// The values that carry it; the first one's characteristic is the one a client must
        /// subscribe to before asking for records.
        public var values: [Value]
        /// A record.
        public init(sequenceNumber: UInt16, values: [Value]) {
            self.sequenceNumber = sequenceNumber
            self.values = values
        }
    }

    /// What happened, for the application's log.
    public enum Event: Sendable, Equatable {
        /// A client's request was answered (`answer`: the RACP indication) after `sent` records.
        case answered(GATTServerClient, sent: Int, answer: RecordAccessControlPoint.Owned)
        /// Records were deleted at a client's request.
        case deleted(GATTServerClient, [UInt16])
    }

    private struct Handles: Sendable {
        var racp: UInt16, racpCCCD: UInt16, record: UInt16, recordCCCD: UInt16
        var byUUID: [BluetoothUUID: UInt16]
    }

    private struct State: Sendable {
        var records: [Record]
        var handles: Handles?
        var procedures: [ATTServerClientID: RACPServer] = [:]
        /// Per client, the writes taken (Write Response sent) whose `.wrote` event has not
        /// come yet: the client is busy for another request until then (not for an Abort).
        var accepted: [ATTServerClientID: Int] = [:]
        /// What each client's procedure does after its answer was confirmed, decided the
        /// moment the confirmation came (so its next request finds it idle), for the task
        /// that sent the answer.
        var afterConfirmation: [ATTServerClientID: [RACPServer.Action]] = [:]
    }

    /// The record service (0x1808 Glucose...): the characteristics are looked up in it.
    public let service: BluetoothUUID
    /// The characteristic a client must subscribe to before asking for records (2A18
    /// Glucose Measurement; 2A5E PLX Spot-check...); nil: the first value's of a record.
    public let recordCharacteristic: BluetoothUUID?
    /// What the control point accepts.
    public let rules: RACPServerRules
    /// The most records kept: a new one beyond it drops the oldest, as meters do.
    public let capacity: Int
    private let state: Mutex<State>
    private let events: AsyncStream<Event>.Continuation
    /// Answers and deletions as they happen.
    public let log: AsyncStream<Event>

    /// Records for `service` (oldest first, in the order they were taken: sequence numbers
    /// wrap), served with `rules`, at most `capacity` kept.
    public init(service: BluetoothUUID, recordCharacteristic: BluetoothUUID? = nil, rules: RACPServerRules = RACPServerRules(),
                records: [Record] = [], capacity: Int = 1000) {
        self.service = service
        self.recordCharacteristic = recordCharacteristic
        self.rules = rules
        self.capacity = max(1, capacity)
        state = Mutex(State(records: Array(records.suffix(max(1, capacity)))))
        (log, events) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    deinit { events.finish() }

    /// Stores a new record as the newest (the oldest goes beyond ``capacity``); one whose
    /// sequence number is held already replaces that record where it is.
    public func append(_ record: Record) {
        state.withLock { s in
            if let i = s.records.firstIndex(where: { $0.sequenceNumber == record.sequenceNumber }) {
                s.records[i] = record
                return
            }
            s.records.append(record)
            if s.records.count > capacity { s.records.removeFirst(s.records.count - capacity) }
        }
    }

    /// The sequence numbers held, oldest first.
    public var sequenceNumbers: [UInt16] { state.withLock { $0.records.map(\.sequenceNumber) } }

    /// The RACP characteristic's write handler: a refused request is its ATT error (busy,
    /// not subscribed; a Write Command, which cannot be answered, is dropped). Nothing changes
    /// here: the procedure starts at the write's event, once the write is committed and its
    /// Write Response out (a prepared write whose Execute fails never starts one).
    public var writeHandler: GATTWriteHandler {
        { [self] ctx, value in self.written(ctx, value) }
    }

    /// Finds the service's characteristics in the served database; false when the service,
    /// its control point or a record characteristic (or their CCCDs) is missing.
    @discardableResult
    public func attach(to server: GATTServer) -> Bool {
        let layout = server.layout
        guard let svc = layout.services.first(where: { $0.uuid == service }),
              let racp = svc.characteristics.first(where: { $0.uuid == RecordAccessControlPoint.uuid }),
              let racpCCCD = racp.cccdHandle else { return false }
        var byUUID: [BluetoothUUID: UInt16] = [:]
        for c in svc.characteristics where c.uuid != RecordAccessControlPoint.uuid { byUUID[c.uuid] = c.valueHandle }
        let wanted = recordCharacteristic ?? state.withLock { $0.records.first?.values.first?.uuid }
        let record = wanted.flatMap { u in svc.characteristics.first { $0.uuid == u } }
            ?? svc.characteristics.first { $0.uuid != RecordAccessControlPoint.uuid && $0.cccdHandle != nil }
        guard let record, let recordCCCD = record.cccdHandle else { return false }
        state.withLock {
            $0.handles = Handles(racp: racp.valueHandle, racpCCCD: racpCCCD, record: record.valueHandle, recordCCCD: recordCCCD,
                                 byUUID: byUUID)
        }
        return true
    }

    private func written(_ ctx: GATTRequestContext, _ value: [UInt8]) -> ATTErrorCode? {
        // A Write Command cannot be answered; a prepared write may not be stored after all
        // (and no RACP request needs one: the longest is 17 bytes).
        guard ctx.withResponse, !ctx.prepared else { return .requestNotSupported }
        return state.withLock { s in
            guard let h = s.handles else { return .unlikelyError }
            // A trial run: only the refusals matter here, in the machine's order (the CCCDs
            // first). A write taken but not started yet makes the client busy for a request
            // (an Abort is never busy: the machine decides at its event).
            var trial = s.procedures[ctx.client] ?? RACPServer(rules: rules)
            let actions = trial.write(value, stored: s.records.map(\.sequenceNumber),
                                      racpIndications: ctx.configuration(ofDescriptor: h.racpCCCD).contains(.indicate),
                                      recordNotifications: !ctx.configuration(ofDescriptor: h.recordCCCD).isEmpty)
            if case .reject(let code)? = actions.first { return code }
            if s.accepted[ctx.client, default: 0] > 0, value.first != RACPOpCode.abortOperation.rawValue { return rules.busyError }
            s.accepted[ctx.client, default: 0] += 1
            return nil
        }
    }

    /// A server event: a control point write starts (or feeds) its client's procedure on a
    /// task of its own; a client that leaves ends its procedure silently.
    public func handle(_ event: GATTServerEvent, on server: GATTServer) {
        switch event {
        case .wrote(let client, let handle, let value, true):
            guard let h = state.withLock({ $0.handles }), handle == h.racp else { return }
            func subscribed(_ valueHandle: UInt16) -> GATTClientConfiguration {
                server.subscribers(of: valueHandle).first { $0.0.id == client.id }?.1 ?? []
            }
            let racpIndications = subscribed(h.racp).contains(.indicate), records = !subscribed(h.record).isEmpty
            let work: [RACPServer.Action] = state.withLock { s in
                if let n = s.accepted[client.id] { s.accepted[client.id] = n > 1 ? n - 1 : nil }
                var procedure = s.procedures[client.id] ?? RACPServer(rules: rules)
                let actions = procedure.write(value, stored: s.records.map(\.sequenceNumber), racpIndications: racpIndications,
                                              recordNotifications: records)
                // Refused now (unsubscribed since the write was checked): there is no one to answer.
                if case .reject? = actions.first { return [] }
                s.procedures[client.id] = procedure
                return actions
            }
            if !work.isEmpty { Task { await self.perform(work, for: client, on: server) } }
        case .disconnected(let client, _):
            state.withLock {
                $0.procedures[client.id] = nil
                $0.accepted[client.id] = nil
                $0.afterConfirmation[client.id] = nil
            }
        default:
            break
        }
    }

    /// How one value of a record went.
    private enum Delivery {
        case sent, notSubscribed, failed
    }

    /// One value of a record to one client: notified or indicated as that client subscribed
    /// (indicated only where it asked for indications alone).
    private func send(_ bytes: [UInt8], on handle: UInt16, to client: GATTServerClient, _ server: GATTServer) async -> Delivery {
        guard let config = server.subscribers(of: handle).first(where: { $0.0.id == client.id })?.1 else { return .notSubscribed }
        if config.contains(.notify) {
            return (await server.notifyWhenReady(handle, value: bytes, to: [client.id], store: false)).sent.isEmpty ? .failed : .sent
        }
        do throws(GATTServerError) {
            try await server.indicate(handle, value: bytes, to: client.id, store: false)
            return .sent
        } catch {
            return .failed
        }
    }

    /// Carries out a procedure: after each record sent and each answer confirmed, the
    /// machine says what comes next.
    private func perform(_ first: [RACPServer.Action], for client: GATTServerClient, on server: GATTServer) async {
        var queue = first[...]
        var sent = 0
        while let action = queue.popFirst() {
            let next: [RACPServer.Action]
            switch action {
            case .sendRecord(let n):
                let (record, handles) = state.withLock { s in (s.records.first { $0.sequenceNumber == n }, s.handles) }
                var delivered = record != nil
                if let record, let handles {
                    // The record's own value must go; a second part (a glucose context) only
                    // to a client that subscribed to it (GLS §3.2.3: it is optional for them).
                    for (i, v) in record.values.enumerated() where delivered {
                        guard let target = handles.byUUID[v.uuid] else { continue }
                        switch await send(v.bytes, on: target, to: client, server) {
                        case .sent: break
                        case .notSubscribed: delivered = i > 0 && target != handles.record
                        case .failed: delivered = false
                        }
                    }
                }
                if delivered { sent += 1 }
                next = state.withLock { s in
                    delivered ? s.procedures[client.id]?.recordSent() ?? [] : s.procedures[client.id]?.recordFailed() ?? []
                }
            case .delete(let gone):
                state.withLock { $0.records.removeAll { gone.contains($0.sequenceNumber) } }
                events.yield(.deleted(client, gone))
                next = []
            case .indicate(let answer):
                guard let racp = state.withLock({ $0.handles?.racp }), let bytes = try? answer.encoded() else {
                    state.withLock { $0.procedures[client.id]?.reset() }
                    return
                }
                do throws(GATTServerError) {
                    // The procedure ends inside the server as the confirmation comes: the
                    // client's next request (right behind it) finds it idle.
                    try await server.indicate(racp, value: bytes, to: client.id, store: false) { [self] in
                        state.withLock { s in
                            s.afterConfirmation[client.id] = s.procedures[client.id]?.responseConfirmed() ?? []
                        }
                    }
                } catch {
                    state.withLock { $0.procedures[client.id]?.reset() }
                    return
                }
                events.yield(.answered(client, sent: sent, answer: answer))
                sent = 0
                next = state.withLock { $0.afterConfirmation.removeValue(forKey: client.id) ?? [] }
            case .reject:
                next = []
            }
            queue.append(contentsOf: next)
        }
    }
}
