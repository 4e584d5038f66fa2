extension StringProtocol {
    /// Substring test on UTF-8 bytes. The stdlib's `contains(_: String)` lives in
    /// _StringProcessing, whose code (with the regex parser it pulls in) adds about 1.3 MB
    /// to the static binary; this is the only text search the CLI needs.
    func containsBytes(_ needle: some StringProtocol) -> Bool {
        let hay = Array(utf8), pin = Array(needle.utf8)
        if pin.isEmpty { return true }
        if pin.count > hay.count { return false }
        for start in 0 ... hay.count - pin.count where hay[start] == pin[0] {
            var i = 1
            while i < pin.count && hay[start + i] == pin[i] { i += 1 }
            if i == pin.count { return true }
        }
        return false
    }
}
