import BluetoothTransport
import BluetoothWire
import Glibc
import Synchronization

// LE links on the driver thread: the connection manager's and the advertiser's actions,
// links opened and closed, L2CAP frames routed to the ATT consumers, ACL flow control and
// the non-blocking pending-write queue.
extension HostDriver {
    func handle(_ request: LinkRequest) {
        switch request {
        case .connect(let id, let peer, let parameters, let timeout, let c):
            guard !closing, info != nil else {
                c.resume(returning: .failure(.hostClosed))
                return
            }
            connectWaiters[id] = c
            execute(connections.connect(id, to: peer, parameters: parameters, timeout: timeout, now: Sys.now()))
        case .cancelConnect(let id):
            execute(connections.cancelConnect(id, now: Sys.now()))
        case .disconnect(let conn, let reason, let c):
            guard links[conn.handle]?.connection === conn else {
                c.resume()
                return
            }
            links[conn.handle]?.disconnectWaiters.append(c)
            // Data still waiting for controller buffers or not yet reported sent (Number Of
            // Completed Packets) goes first: HCI_Disconnect would overtake or flush it (the
            // last keys of a pairing, a final write). At most 2 s.
            if (aclFlow.map { $0.queuedPackets(conn.handle) + $0.inFlight(conn.handle) } ?? 0) > 0 {
                deferredDisconnects[conn.handle] = (reason, Sys.now() &+ 2_000_000_000)
            } else {
                execute(connections.disconnect(conn.handle, reason: reason))
            }
        case .startATT(let conn, let role, let received, let closed):
            guard var record = links[conn.handle], record.connection === conn else {
                let why = conn.closeInfo
                closed(why.reason, why.message)
                return
            }
            let consumer = ATTConsumer(received: received, closed: closed)
            switch role {
            case .client: record.attClient = consumer
            case .server: record.attServer = consumer
            }
            // Hand over what waited for this side (for the client: everything, unless a server is there).
            var mine: [[UInt8]] = []
            var rest: [[UInt8]] = []
            for pdu in record.buffered {
                let toServer = pdu.first.map { ATTOpcode(rawValue: $0).isClientToServer } ?? false
                if role == .server ? toServer : (!toServer || record.attServer == nil) { mine.append(pdu) } else { rest.append(pdu) }
            }
            record.buffered = rest
            links[conn.handle] = record
            for pdu in mine { pdu.withUnsafeBytes { received($0) } }
        case .updateParameters(let conn, let parameters, let c):
            guard links[conn.handle]?.connection === conn else {
                c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
                return
            }
            do throws(HostError) {
                let actions = try connections.updateParameters(conn.handle, parameters)
                links[conn.handle]?.updateWaiters.append(c)
                execute(actions)
            } catch {
                c.resume(returning: .failure(error))
            }
        case .sendACL(let conn, let frame):
            guard links[conn.handle]?.connection === conn else {
                conn.bytesLeft(frame.count)
                return
            }
            sendFrame(frame, handle: conn.handle, accounted: true)
        }
    }

    // MARK: Connections

    func execute(_ actions: [ConnectionAction]) {
        for action in actions {
            switch action {
            case .sendCommand(let command, let purpose):
                if let error = submit(command, waiter: .connection(purpose)) {
                    execute(connections.commandAnswered(purpose, .failure(error), now: Sys.now()))
                }
            case .sendL2CAP(let handle, let frame):
                sendFrame(frame, handle: handle, accounted: false)
            case .connected(let id, let state):
                let conn = openLink(state)
                if let c = connectWaiters.removeValue(forKey: id) {
                    c.resume(returning: .success(conn))
                } else {
                    // The caller is gone (cannot happen: the manager disconnects abandoned links).
                    execute(connections.disconnect(state.handle))
                }
            case .connectFailed(let id, let error):
                connectWaiters.removeValue(forKey: id)?.resume(returning: .failure(error))
            case .linkOpened(let state):
                let conn = openLink(state)
                // The address the central connected to (set 0's; a rotated RPA may differ later).
                conn.localRandomAddress = advertising.advertiser.configuration(0)?.ownAddress.randomAddress
                incoming.yield(conn)
                send(advertising.peripheralLink(opened: state.handle))
            case .linkUpdated(let state):
                links[state.handle]?.connection.update(state)
            case .linkClosed(let state, let reason):
                if let record = links[state.handle] {
                    closeLink(record.connection, reason: reason)
                } else {
                    // A link the manager adopted to disconnect it (never handed out).
                    aclFlowRemove(state.handle)
                }
            case .disconnectFailed(let handle, _):
                if let waiters = links[handle]?.disconnectWaiters {
                    links[handle]?.disconnectWaiters = []
                    for c in waiters { c.resume() }
                }
            case .parametersUpdated(let handle, let result):
                if let waiters = links[handle]?.updateWaiters {
                    links[handle]?.updateWaiters = []
                    for c in waiters { c.resume(returning: result) }
                }
            }
        }
    }

    func openLink(_ state: LELinkState) -> LEConnection {
        let conn = LEConnection(driver: self, link: state)
        if let id = security.identity(of: state.peer) { conn.setIdentity(id) }
        links[state.handle] = LinkRecord(connection: conn)
        aclFlow?.addLink(state.handle)
        l2cap.resetLink(state.handle)
        return conn
    }

    func aclFlowRemove(_ handle: UInt16) {
        l2cap.resetLink(handle)
        if let packets = aclFlow?.removeLink(handle) { writeACL(packets) }
    }

    /// The link is down: fail everything pending on it with the reason.
    func closeLink(_ conn: LEConnection, reason: HCIErrorCode?, message: String? = nil) {
        guard let record = links[conn.handle], record.connection === conn else { return }
        links[conn.handle] = nil
        let text = message ?? HostError.disconnectMessage(reason)
        conn.markClosed(reason, text)
        conn.bytesLeft(conn.queuedBytes.load(ordering: .relaxed))
        aclFlowRemove(conn.handle)
        record.attClient?.closed(reason, text)
        record.attServer?.closed(reason, text)
        pairingLinkClosed(conn.handle, HostError(.disconnected(reason), text))
        execute(creditChannels.machine.linkClosed(conn.handle))
        deferredDisconnects[conn.handle] = nil
        if record.connection.role == .peripheral { send(advertising.peripheralLink(closed: conn.handle)) }
        for c in record.disconnectWaiters { c.resume() }
        for c in record.updateWaiters { c.resume(returning: .failure(HostError(.disconnected(reason), text))) }
    }

    func sendFrame(_ frame: [UInt8], handle: UInt16, accounted: Bool) {
        guard aclFlow != nil else { return }
        do throws(ACLFlowError) {
            if let packets = try aclFlow?.enqueue(frame, handle: handle, accounted: accounted) { writeACL(packets) }
        } catch {
            stats.unroutedFrames += 1
            if accounted { links[handle]?.connection.bytesLeft(frame.count) }
        }
    }

    func writeACL(_ packets: [OutgoingACLPacket]) {
        for p in packets {
            stats.aclPacketsOut += 1
            write(p.packet)
            if p.accountedBytes > 0 {
                links[p.handle]?.connection.bytesLeft(p.accountedBytes)
            }
        }
    }

    /// A complete L2CAP frame of a registered channel. Must not touch `l2cap`.
    func dispatchFrame(_ handle: UInt16, _ consumer: L2CAPChannelConsumer, _ payload: UnsafeRawBufferPointer) {
        guard let record = links[handle] else {
            stats.unroutedFrames += 1
            return
        }
        switch consumer {
        case .att:
            let toServer = payload.first.map { ATTOpcode(rawValue: $0).isClientToServer } ?? false
            if let consumer = toServer ? (record.attServer ?? record.attClient) : record.attClient {
                consumer.received(payload)  // a view: the receiver copies what it keeps
            } else if record.buffered.count < LEConnection.bufferedATTLimit {
                links[handle]?.buffered.append(Array(payload))
            } else {
                stats.droppedATT += 1
            }
        case .leSignaling:
            signalingReceived(handle, payload)
        case .creditBased(let cid):
            execute(creditChannels.machine.received(handle: handle, cid: cid, payload: payload, now: Sys.now(),
                                            nextIdentifier: { [unowned self] in self.signalingIdentifier(handle) },
                                            indicationIdentifier: { [unowned self] in self.indicationIdentifier(handle) }))
        case .smp:
            if pairingConfiguration == nil {
                execute(connections.receivedSMP(handle: handle, payload: payload))  // refused
            } else {
                smpReceived(handle, payload)
            }
        }
    }

    func receivedACL(_ body: UnsafeRawBufferPointer) {
        stats.aclPacketsIn += 1
        let packet: ACLPacket
        do throws(WireError) {
            packet = try ACLPacket(parsing: body)
        } catch {
            stats.malformedPackets += 1
            stats.lastMalformed = "malformed HCI ACL packet: \(error)"
            return
        }
        let unroutedBefore = l2cap.unroutedFrames
        let failures = l2cap.receive(handle: packet.header.handle, boundary: packet.header.packetBoundary,
                                     fragment: packet.payload) { h, consumer, payload in
            self.dispatchFrame(h, consumer, payload)
        }
        stats.unroutedFrames += l2cap.unroutedFrames - unroutedBefore
        for f in failures {
            stats.l2capErrors += 1
            stats.lastL2CAPError = f.description
        }
    }

    func write(_ packet: [UInt8]) {
        guard running else { return }
        stats.packetsOut += 1
        stats.bytesOut += packet.count
        if packet.first == 0x01 { stats.commandsSent += 1 }
        packet.withUnsafeBytes { observer?($0, true) }
        // In order: behind what waits, and never from inside a read (flushed after it).
        if case .reading = reader { pending.append(packet); return }
        if hasPending {
            pending.append(packet)
            return
        }
        let taken: Result<Int, TransportError> = packet.withUnsafeBytes { buffer in
            do throws(TransportError) { return .success(try transport.writeAvailable(buffer)) } catch { return .failure(error) }
        }
        switch taken {
        case .success(let n) where n >= packet.count:
            return
        case .success(let n):
            pending.append(packet)
            pendingOffset = n
            stalledSince = Sys.now()
        case .failure(let e):
            terminate(HostError.from(e, transport: transportName))
        }
    }

    /// Writes what waits, as far as the transport takes it now.
    func flushPending() {
        while running, pendingHead < pending.count {
            let offset = pendingOffset
            let taken: Result<Int, TransportError> = pending[pendingHead].withUnsafeBytes { buffer in
                do throws(TransportError) {
                    return .success(try transport.writeAvailable(UnsafeRawBufferPointer(rebasing: buffer[offset...])))
                } catch {
                    return .failure(error)
                }
            }
            switch taken {
            case .failure(let e):
                terminate(HostError.from(e, transport: transportName))
                return
            case .success(let n):
                if n > 0 { stalledSince = nil }
                pendingOffset += n
                guard pendingOffset >= pending[pendingHead].count else {
                    if stalledSince == nil { stalledSince = Sys.now() }
                    // A transport that never quite catches up must not keep what it took.
                    if pendingHead >= 32 {
                        pending.removeFirst(pendingHead)
                        pendingHead = 0
                    }
                    return
                }
                pendingHead += 1
                pendingOffset = 0
            }
        }
        pending.removeAll(keepingCapacity: true)
        pendingHead = 0
        stalledSince = nil
    }

}
