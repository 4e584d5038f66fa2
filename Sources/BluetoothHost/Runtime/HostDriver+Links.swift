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
            execute(links.connect(id, to: peer, parameters: parameters, timeout: timeout, now: Sys.now(), c))
        case .cancelConnect(let id):
            execute(links.manager.cancelConnect(id, now: Sys.now()))
        case .disconnect(let conn, let reason, let c):
            guard links.isCurrent(conn) else {
                c.resume()
                return
            }
            links.waitForDisconnect(conn, c)
            // Data still waiting for controller buffers or not yet reported sent (Number Of
            // Completed Packets) goes first: HCI_Disconnect would overtake or flush it (the
            // last keys of a pairing, a final write).
            if queuedACL(conn.handle) > 0 {
                links.deferDisconnect(conn.handle, reason: reason, now: Sys.now())
            } else {
                execute(links.manager.disconnect(conn.handle, reason: reason))
            }
        case .startATT(let conn, let role, let received, let closed):
            guard let waiting = links.attach(conn, role, LinkRuntime.ATTConsumer(received: received, closed: closed)) else {
                let why = conn.closeInfo
                closed(why.reason, why.message)
                return
            }
            for pdu in waiting { pdu.withUnsafeBytes { received($0) } }
        case .updateParameters(let conn, let parameters, let c):
            guard links.isCurrent(conn) else {
                c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
                return
            }
            do throws(HostError) {
                let actions = try links.manager.updateParameters(conn.handle, parameters, now: Sys.now())
                links.waitForUpdate(conn.handle, c)
                execute(actions)
            } catch {
                c.resume(returning: .failure(error))
            }
        case .setPHY(let conn, let tx, let rx, let options, let c):
            guard links.isCurrent(conn) else {
                c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
                return
            }
            do throws(HostError) {
                let actions = try links.manager.setPHY(conn.handle, tx: tx, rx: rx, options: options, now: Sys.now())
                links.wait(for: .phy, conn.handle, c)
                execute(actions)
            } catch {
                c.resume(returning: .failure(error))
            }
        case .setDataLength(let conn, let octets, let time, let c):
            guard links.isCurrent(conn) else {
                c.resume(returning: .failure(conn.disconnectError ?? HostError(.disconnected(nil), HostError.disconnectMessage(nil))))
                return
            }
            do throws(HostError) {
                let actions = try links.manager.setDataLength(conn.handle, txOctets: octets, txTime: time)
                links.wait(for: .dataLength, conn.handle, c)
                execute(actions)
            } catch {
                c.resume(returning: .failure(error))
            }
        case .sendACL(let conn, let frame):
            guard links.isCurrent(conn) else {
                conn.bytesLeft(frame.count)
                return
            }
            sendFrame(frame, handle: conn.handle, accounted: true)
        }
    }

    /// ACL packets of the link queued or not yet reported sent.
    func queuedACL(_ handle: UInt16) -> Int {
        aclFlow.map { $0.queuedPackets(handle) + $0.inFlight(handle) } ?? 0
    }

    /// Sends the deferred disconnects whose data left (or whose time is up).
    func flushDeferredDisconnects(now: UInt64) {
        for d in links.disconnectsDue(now: now, queued: { queuedACL($0) }) {
            execute(links.manager.disconnect(d.handle, reason: d.reason))
        }
    }

    // MARK: Connections

    func execute(_ actions: [ConnectionAction]) {
        for action in actions {
            switch action {
            case .sendCommand(let command, let purpose):
                if let error = submit(command, waiter: .connection(purpose)) {
                    execute(links.manager.commandAnswered(purpose, .failure(error), now: Sys.now()))
                }
            case .sendL2CAP(let handle, let frame):
                sendFrame(frame, handle: handle, accounted: false)
            case .connected(let id, let state):
                let conn = openLink(state)
                if !links.connected(id, .success(conn)) {
                    // The caller is gone (cannot happen: the manager disconnects abandoned links).
                    execute(links.manager.disconnect(state.handle))
                }
            case .connectFailed(let id, let error):
                _ = links.connected(id, .failure(error))
            case .linkOpened(let state):
                let conn = openLink(state)
                // The address the central connected to (set 0's; a rotated RPA may differ later).
                conn.localRandomAddress = advertising.advertiser.configuration(0)?.ownAddress.randomAddress
                incoming.yield(conn)
                send(advertising.peripheralLink(opened: state.handle))
            case .linkUpdated(let state):
                links.connection(state.handle)?.update(state)
            case .linkClosed(let state, let reason):
                if let conn = links.connection(state.handle) {
                    closeLink(conn, reason: reason)
                } else {
                    // A link the manager adopted to disconnect it (never handed out).
                    aclFlowRemove(state.handle)
                }
            case .disconnectFailed(let handle, _):
                for c in links.disconnectFailed(handle) { c.resume() }
            case .parametersUpdated(let handle, let result):
                for c in links.parametersUpdated(handle) { c.resume(returning: result) }
            case .phyUpdated(let handle, let result):
                for c in links.ended(.phy, handle) { c.resume(returning: result) }
            case .dataLengthSet(let handle, let result):
                for c in links.ended(.dataLength, handle) { c.resume(returning: result) }
            }
        }
    }

    func openLink(_ state: LELinkState) -> LEConnection {
        let conn = LEConnection(driver: self, link: state)
        if let id = security.identity(of: state.peer) { conn.setIdentity(id) }
        links.opened(conn)
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
        guard let record = links.closed(conn) else { return }
        let text = message ?? HostError.disconnectMessage(reason)
        conn.markClosed(reason, text)
        conn.bytesLeft(conn.queuedBytes.load(ordering: .relaxed))
        aclFlowRemove(conn.handle)
        record.attClient?.closed(reason, text)
        record.attServer?.closed(reason, text)
        pairingLinkClosed(conn.handle, HostError(.disconnected(reason), text))
        execute(creditChannels.machine.linkClosed(conn.handle))
        if conn.role == .peripheral { send(advertising.peripheralLink(closed: conn.handle)) }
        for c in record.disconnectWaiters { c.resume() }
        for c in record.updateWaiters + record.phyWaiters + record.dataLengthWaiters {
            c.resume(returning: .failure(HostError(.disconnected(reason), text)))
        }
    }

    func sendFrame(_ frame: [UInt8], handle: UInt16, accounted: Bool) {
        guard aclFlow != nil else { return }
        do throws(ACLFlowError) {
            if let packets = try aclFlow?.enqueue(frame, handle: handle, accounted: accounted) { writeACL(packets) }
        } catch {
            stats.unroutedFrames += 1
            if accounted { links.connection(handle)?.bytesLeft(frame.count) }
        }
    }

    func writeACL(_ packets: [OutgoingACLPacket]) {
        for p in packets {
            stats.aclPacketsOut += 1
            write(p.packet)
            if p.accountedBytes > 0 {
                links.connection(p.handle)?.bytesLeft(p.accountedBytes)
            }
        }
    }

    /// A complete L2CAP frame of a registered channel. Must not touch `l2cap`.
    func dispatchFrame(_ handle: UInt16, _ consumer: L2CAPChannelConsumer, _ payload: UnsafeRawBufferPointer) {
        guard links.connection(handle) != nil else {
            stats.unroutedFrames += 1
            return
        }
        switch consumer {
        case .att:
            switch links.routeATT(handle, payload) {
            case .consumer(let c): c.received(payload)  // a view: the receiver copies what it keeps
            case .buffered: break
            case .dropped: stats.droppedATT += 1
            case .noLink: stats.unroutedFrames += 1
            }
        case .leSignaling:
            signalingReceived(handle, payload)
        case .creditBased(let cid):
            execute(creditChannels.machine.received(handle: handle, cid: cid, payload: payload, now: Sys.now(),
                                            nextIdentifier: { [unowned self] in self.signalingIdentifier(handle) },
                                            indicationIdentifier: { [unowned self] in self.indicationIdentifier(handle) }))
        case .smp:
            if pairingConfiguration == nil {
                execute(links.manager.receivedSMP(handle: handle, payload: payload))  // refused
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
