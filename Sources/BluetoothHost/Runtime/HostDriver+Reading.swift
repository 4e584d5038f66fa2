import BluetoothTransport
import BluetoothWire
import Glibc
import Synchronization

// The receive path on the driver thread: transport reads, HCI events and ACL packets
// dispatched to the state machines.
extension HostDriver {
    // MARK: Reading

    func readTransport() {
        reader = .reading
        let result: Result<Bool, TransportError>
        do throws(TransportError) {
            result = .success(try transport.readAvailable({ packet in self.received(packet) }, stoppingWhen: {
                guard self.shouldPauseReading() else { return false }
                self.reader = .paused
                return true
            }))
        } catch {
            result = .failure(error)
        }
        if case .reading = reader { reader = .waiting }
        switch result {
        case .success(true):
            flushPending()
        case .success(false):
            terminate(HostError.transportClosed(transportName))
        case .failure(let error):
            terminate(HostError.from(error, transport: transportName))
        }
    }

    func received(_ packet: UnsafeRawBufferPointer) {
        guard running else { return }
        stats.packetsIn += 1
        stats.bytesIn += packet.count
        observer?(packet, false)
        if packet.count >= 1, packet[0] == H4PacketType.acl.rawValue {
            receivedACL(UnsafeRawBufferPointer(rebasing: packet[1...]))
            return
        }
        guard packet.count >= 1, packet[0] == H4PacketType.event.rawValue else { return }
        stats.events += 1
        let body = UnsafeRawBufferPointer(rebasing: packet[1...])
        let event: HCIEvent
        do throws(WireError) {
            event = try HCIEvent(parsing: body)
        } catch {
            stats.malformedPackets += 1
            stats.lastMalformed = "malformed HCI event 0x\(hex(body.first ?? 0, 2)): \(error)"
            return
        }
        switch event {
        case .commandComplete, .commandStatus:
            execute(flow.handleEvent(event, now: Sys.now()))
        case .leMeta(let meta):
            switch meta {
            case .advertisingReport, .extendedAdvertisingReport, .directedAdvertisingReport, .scanTimeout:
                deliver(scanning.handle(meta, now: Sys.now()))
            case .advertisingSetTerminated(let e):
                send(advertising.setTerminated(e))
            case .longTermKeyRequest(let e):
                longTermKeyRequested(e)
            default:
                execute(links.manager.handle(meta, now: Sys.now()))
            }
        case .disconnectionComplete:
            execute(links.manager.handle(event, now: Sys.now()))
        case .encryptionChange(let e):
            encryptionChanged(e.connectionHandle, status: e.status, enabled: e.encryptionEnabled.rawValue != 0, keySize: e.encryptionKeySize)
        case .encryptionKeyRefreshComplete(let e):
            encryptionChanged(e.connectionHandle, status: e.status, enabled: true, keySize: nil)
        case .numberOfCompletedPackets(let n):
            if let packets = aclFlow?.handle(n) { writeACL(packets) }
            if links.hasDeferredDisconnects { flushDeferredDisconnects(now: Sys.now()) }
        default:
            break
        }
    }
}
