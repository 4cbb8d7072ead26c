/// The result of processing a background push (UIBackgroundFetchResult): `complete`'s `result`.
public enum BackgroundFetchResult: String, Sendable, CaseIterable {
    /// New data was fetched.
    case newData
    /// Nothing new.
    case noData
    /// Fetching failed.
    case failed
}
