import BluetoothTransport
import BluetoothWire
import Glibc
import Synchronization

// Closing the host on the driver thread: scanning and advertising stopped, links
// disconnected, waiters failed with the reason, then the thread ends.
extension HostDriver {
    // MARK: Close

    func beginClose() {
        if case .running = lifecycle {
            lifecycle = .closing(disconnects: 0)
            if let initContinuation {
                initContinuation.resume(returning: .failure(.hostClosed))
                self.initContinuation = nil
                initializer = nil
            }
            if scanning.isRunning(nil) { stopScan(continuation: nil) }
            if let quiet = advertising.quietCommand {
                // Leave the controller quiet: no advertising once the host is gone.
                disabling += 1
                if submit(quiet, waiter: .scanDisable(continuation: nil)) != nil {
                    disabling -= 1
                }
                send(advertising.close(.hostClosed))
            }
            // Fail connects still waiting; take the links down (their closes follow).
            links.closeAll(.hostClosed)
            for conn in links.connections {
                let handle = conn.handle
                // Counted before it goes, so that no answer can find the count short.
                countClosingDisconnects(+1)
                if submit(DisconnectCommand(connectionHandle: handle, reason: .remoteUserTerminatedConnection),
                          waiter: .connection(.disconnect(handle: handle))) != nil {
                    countClosingDisconnects(-1)
                }
                closeLink(conn, reason: nil)
            }
        }
        maybeFinishClose()
    }

    /// Disconnect commands close still waits for, while it closes.
    func countClosingDisconnects(_ delta: Int) {
        if case .closing(let n) = lifecycle { lifecycle = .closing(disconnects: max(n + delta, 0)) }
    }

    func maybeFinishClose() {
        guard case .closing(disconnects: 0) = lifecycle, disabling == 0 else { return }
        terminate(.hostClosed)
    }

    /// Stops everything: fails pending commands, ends the scan stream with `error`,
    /// closes the transport and lets the thread exit.
    func terminate(_ error: HostError) {
        guard running else { return }
        let wasClosing = closing
        lifecycle = .stopped
        let waiters = mailbox.withLock { m in
            m.terminalError = wasClosing ? HostError.hostClosed : error
            defer { m.terminationWaiters.removeAll() }
            return (m.terminalError, Array(m.terminationWaiters.values))
        }
        for c in waiters.1 { c.resume(returning: waiters.0) }
        if let initContinuation {
            initContinuation.resume(returning: .failure(error))
            self.initContinuation = nil
        }
        _ = scanning.stop(error)  // the transport is gone: nothing to disable
        links.closeAll(error)
        send(advertising.close(error))
        incoming.finish()
        pairingEvents.finish()
        creditChannels.finishListeners()
        for conn in links.connections { closeLink(conn, reason: nil, message: "disconnected: \(error.message)") }
        let actions = flow.failAll(error)
        pending.removeAll()
        pendingHead = 0
        pendingOffset = 0
        stalledSince = nil
        execute(actions)
        // The kernel's last count of dropped packets, while the socket is still open.
        if let drops = transport.receiveDrops { stats.droppedByTransport = drops }
        transport.close()
    }

    func finishThread() {
        publishStatistics()
        // Requests that raced with the stop.
        let late = mailbox.withLock { m in
            let r = m.requests
            m.requests.removeAll()
            return r
        }
        let error = mailbox.withLock { $0.terminalError } ?? .hostClosed
        for r in late {
            r.refuse(error)
        }
        Sys.close(wakeFD)
        Sys.close(wakeWriteFD)
        for c in closeContinuations { c.resume() }
        closeContinuations.removeAll()
    }

}
