import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothProfiles
import BluetoothWire
import HCIGATTFormat
import Synchronization

/// The followed devices' links as their followers report them: a command waits here for
/// its device's link (connected and its database known) to come back.
final class FollowedLinks: Sendable {
    struct Link {
        var peer: GATTPeer
        var database: GATTDatabase?
    }

    private struct State {
        var allowed: Set<BluetoothAddress> = []
        /// Devices given by name and not found yet: their addresses are not known.
        var lookups = 0
        var links: [BluetoothAddress: Link] = [:]
        var waiters: [(id: UInt64, device: BluetoothAddress, continuation: CheckedContinuation<(GATTPeer, GATTDatabase)?, Never>)] = []
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    /// `device` is one the gateway follows: commands for it are taken.
    func allow(_ device: BluetoothAddress) { state.withLock { _ = $0.allowed.insert(device) } }
    func isAllowed(_ device: BluetoothAddress) -> Bool { state.withLock { $0.allowed.contains(device) } }
    /// `n` devices are given by name: until they are found, a device not allowed may be one.
    func lookingUp(_ n: Int) { state.withLock { $0.lookups += n } }
    /// A device given by name was found (and allowed).
    func lookedUp(_ device: BluetoothAddress) {
        state.withLock { s in
            s.allowed.insert(device)
            s.lookups = max(0, s.lookups - 1)
        }
    }
    var lookupsPending: Bool { state.withLock { $0.lookups > 0 } }

    func connected(_ device: BluetoothAddress, _ peer: GATTPeer) {
        state.withLock { $0.links[device] = Link(peer: peer, database: nil) }
    }

    /// The database is known: the link is ready for commands.
    func discovered(_ device: BluetoothAddress, _ database: GATTDatabase) {
        // The waiters and the peer in one lock: a loss in between must not strand them.
        let (ready, peer): ([CheckedContinuation<(GATTPeer, GATTDatabase)?, Never>], GATTPeer?) = state.withLock { s in
            guard var link = s.links[device] else { return ([], nil) }
            link.database = database
            s.links[device] = link
            var out: [CheckedContinuation<(GATTPeer, GATTDatabase)?, Never>] = []
            s.waiters.removeAll { w in
                guard w.device == device else { return false }
                out.append(w.continuation)
                return true
            }
            return (out, link.peer)
        }
        guard let peer else { return }
        for c in ready { c.resume(returning: (peer, database)) }
    }

    func lost(_ device: BluetoothAddress) { state.withLock { _ = $0.links.removeValue(forKey: device) } }

    /// The link of `peer` failed a request: forgotten unless the follower has a new one.
    func lost(_ device: BluetoothAddress, peer: GATTPeer) {
        state.withLock { s in
            if let link = s.links[device], link.peer.client === peer.client { s.links[device] = nil }
        }
    }

    /// The device's link when it is ready, waiting for it at most `timeout`; nil when it
    /// did not come back in time.
    func ready(_ device: BluetoothAddress, timeout: Duration) async -> (GATTPeer, GATTDatabase)? {
        await withTaskGroup(of: (GATTPeer, GATTDatabase)?.self) { group in
            group.addTask { await self.wait(device) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    private func wait(_ device: BluetoothAddress) async -> (GATTPeer, GATTDatabase)? {
        let id: UInt64 = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<(GATTPeer, GATTDatabase)?, Never>) in
                let now: (GATTPeer, GATTDatabase)?? = state.withLock { s in
                    if Task.isCancelled { return .some(nil) }
                    if let link = s.links[device], let db = link.database { return .some((link.peer, db)) }
                    s.waiters.append((id, device, c))
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            let gone = state.withLock { s -> CheckedContinuation<(GATTPeer, GATTDatabase)?, Never>? in
                guard let at = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: at).continuation
            }
            gone?.resume(returning: nil)
        }
    }
}

/// Executes commands from MQTT on the followed devices' links and says how each went: one
/// reply per command id, the same one again for a command delivered twice.
final class CommandExecutor: Sendable {
    let mode: GatewayCommandMode
    let writable: GatewayWriteAllowList
    let links: FollowedLinks
    private let ledger = Mutex(CommandLedger())

    /// Commands executed at once, at most (the rest wait in the runtime's bounded queue).
    static let concurrency = 16

    init(mode: GatewayCommandMode, writable: GatewayWriteAllowList = GatewayWriteAllowList(), links: FollowedLinks) {
        self.mode = mode
        self.writable = writable
        self.links = links
    }

    /// Executes `incoming`; returns its reply (nil: the same command is being executed, and
    /// its reply will answer both).
    func execute(_ incoming: IncomingCommand) async -> String? {
        let command: GatewayCommand
        do throws(GatewayCommand.Refusal) { command = try GatewayCommand.parse(incoming.payload) } catch {
            return CommandReply.failure(id: error.id, error: error.reason)
        }
        let id = command.id
        guard let device = GatewayNaming.device(level: incoming.level) else {
            return CommandReply.failure(id: id, error: "\"\(incoming.level)\" is not a device: 12 hex digits, as in the reading topics")
        }
        // (A device given by name may be this one once it is found: the command waits.)
        guard links.isAllowed(device) || links.lookupsPending else { return Self.notAllowed(id, device) }
        let writes = command.operation != .read
        if writes && mode == .read {
            return CommandReply.failure(id: id, error: "refused: this gateway takes reads only (--commands read)")
        }
        if writes && incoming.retained {
            return CommandReply.failure(id: id, error: "refused: a retained message is never executed as a write (publish commands without the retain flag)")
        }
        let key = GatewayNaming.deviceLevel(device)
        switch ledger.withLock({ $0.begin(device: key, id: id) }) {
        case .answered(let reply): return reply
        case .inProgress: return nil
        case .execute: break
        }
        guard let reply = await run(command, on: device) else { return nil }
        ledger.withLock { $0.finish(device: key, id: id, reply: reply) }
        return reply
    }

    /// The command's reply; nil when the gateway stopped first.
    private func run(_ command: GatewayCommand, on device: BluetoothAddress) async -> String? {
        let id = command.id
        let deadline = ContinuousClock.now + command.timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero, let (peer, database) = await links.ready(device, timeout: left) else {
                if Task.isCancelled { return nil }  // the gateway stops: it did not wait
                if !links.isAllowed(device) { return Self.notAllowed(id, device) }
                return CommandReply.failure(id: id, error: "the link to \(device) is down (waited \(Self.seconds(command.timeout)) s)")
            }
            let handle: UInt16
            let characteristic: GATTCharacteristic?
            switch command.attribute {
            case .uuid(let u):
                guard let c = database.characteristic(uuid: u) else {
                    return CommandReply.failure(id: id, error: "\(device) has no characteristic \(u)")
                }
                (handle, characteristic) = (c.valueHandle, c)
            case .handle(let h):
                // Named and decoded only as the characteristic's value (not its declaration
                // or a descriptor, which the characteristic also contains).
                let c = database.characteristic(containing: h)
                (handle, characteristic) = (h, c?.valueHandle == h ? c : nil)
            }
            if command.operation != .read, let refusal = writable.refusal(handle: handle, in: database) {
                return CommandReply.failure(id: id, error: refusal)
            }
            do throws(GATTError) {
                // A command never pairs or bonds: a protected value answers with its ATT
                // error (the device is bonded, and the link encrypted, by the user's pair).
                let client = peer.client
                let value: [UInt8]? = try await GATTClient.withoutRaisingSecurity { () throws(GATTError) -> [UInt8]? in
                    switch command.operation {
                    case .read:
                        return try await client.read(handle: handle)
                    case .write:
                        try await client.write(handle: handle, value: command.value ?? [])
                    case .writeWithoutResponse:
                        try await client.writeWithoutResponse(handle: handle, value: command.value ?? [])
                    }
                    return nil
                }
                if let value { return CommandReply.success(id: id, fieldsJSON: Self.valueJSON(handle, characteristic, value)) }
                return CommandReply.success(id: id, fieldsJSON: "\"handle\":\(handle)")
            } catch where error.isLinkLoss {
                links.lost(device, peer: peer)
                // A read is tried again on the link that comes back; a write may have been
                // done before the link went: not done twice behind the sender's back.
                if command.operation != .read {
                    return CommandReply.failure(id: id, error: "the link to \(device) dropped during the write: it may or may not have been done")
                }
            } catch {
                return CommandReply.failure(id: id, error: LinkText.describe(error))
            }
        }
    }

    static func notAllowed(_ id: String, _ device: BluetoothAddress) -> String {
        CommandReply.failure(id: id, error: "not allowed: \(device) is not one of this gateway's --device")
    }

    static func seconds(_ d: Duration) -> String {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return ms % 1000 == 0 ? "\(ms / 1000)" : "\(Double(ms) / 1000)"
    }

    /// `"handle":…,"uuid":"…","hex":"…","decoded":{…}` (decoded as the readings are, when a
    /// decoder knows the characteristic).
    static func valueJSON(_ handle: UInt16, _ c: GATTCharacteristic?, _ value: [UInt8]) -> String {
        var out = "\"handle\":\(handle)"
        if let c { out += ",\"uuid\":\(jsonString(c.uuid.description))" }
        out += ",\"hex\":\"\(Hex.string(value))\""  // lower case, as the readings' "hex"
        guard let uuid = c?.uuid else { return out }
        let decoded: [Field]? = value.withUnsafeBytes { buf in
            do throws(WireError) { return try CharacteristicDecoder.decode(uuid: uuid, value: buf)?.fields } catch { return nil }
        }
        if let decoded { out += ",\"decoded\":" + FieldRenderer.jsonObject(decoded) }
        return out
    }
}
