//! Human studies: blind adjudication sheets exported for a person, imported back as
//! adjudication records that analyses apply over automatic matching; seed 000's H7 and H8
//! finding studies; and the sheet reader and checker they share.

pub mod adjudication;
pub mod findings;
pub mod sheet;
