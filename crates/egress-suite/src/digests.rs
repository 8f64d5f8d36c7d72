//! The digests a reviewer cites for evidence (the HTML report shows them,
//! a SARIF result carries them): of one exchange, and of a sub-probe's
//! transcript (every exchange and observation its judge reads). Each is the
//! SHA-256 of the record's compact JSON, exactly as `report verify` reads
//! it back from the saved report: a reader who loads the report and
//! serialises the same record again gets the same digest, and any change to
//! the record changes it.

use egress_model::{Exchange, ProbeRecord, Sha256Digest};
use serde::Serialize;

fn of_json<T: Serialize + ?Sized>(value: &T) -> Sha256Digest {
    // Evidence records have string keys only: serialising cannot fail.
    Sha256Digest::of(&serde_json::to_vec(value).unwrap_or_default())
}

/// The digest of one exchange: its JSON as the report holds it.
pub fn exchange(e: &Exchange) -> Sha256Digest {
    of_json(e)
}

/// The digest of a sub-probe's transcript: the JSON array
/// `[exchanges, observations]` of its record.
pub fn transcript(rec: &ProbeRecord) -> Sha256Digest {
    of_json(&(&rec.exchanges, &rec.observations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_model::Status;

    fn record() -> ProbeRecord {
        ProbeRecord {
            id: "P3.connect".into(),
            status: Status::Pass,
            reason: "refused".into(),
            exchanges: vec![Exchange {
                label: "CONNECT".into(),
                peer: "127.0.0.1:1".into(),
                request: b"CONNECT a:443 HTTP/1.1\r\n\r\n".to_vec().into(),
                response: None,
                error: Some("refused".into()),
                elapsed_ms: 1,
                after: None,
                h2: None,
            }],
            observations: vec![],
        }
    }

    #[test]
    fn digests_survive_a_round_trip_and_change_with_the_evidence() {
        let rec = record();
        let back: ProbeRecord =
            serde_json::from_str(&serde_json::to_string_pretty(&rec).unwrap()).unwrap();
        assert_eq!(transcript(&rec), transcript(&back));
        assert_eq!(exchange(&rec.exchanges[0]), exchange(&back.exchanges[0]));
        let mut changed = rec.clone();
        changed.exchanges[0].request = b"CONNECT b:443 HTTP/1.1\r\n\r\n".to_vec().into();
        assert_ne!(transcript(&rec), transcript(&changed));
        assert_ne!(exchange(&rec.exchanges[0]), exchange(&changed.exchanges[0]));
        // The verdict is not evidence: re-judging does not move the digest.
        changed = rec.clone();
        changed.status = Status::Fail;
        assert_eq!(transcript(&rec), transcript(&changed));
    }
}
