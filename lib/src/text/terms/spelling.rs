//! British spellings folded to American before stemming, so "tumour"
//! finds "tumor" and "randomised" finds "randomized": PubMed abstracts
//! use both (SciFact: 232 "tumour" beside 1,156 "tumor"). Only spellings
//! that are unambiguous in English are folded: the `-our` words listed,
//! the `ae`/`oe` of Greek-derived medical words, `-ise`/`-isation`
//! verbs (with the words where `-ise` is not a British `-ize` left
//! alone) and `-yse` verbs.

use std::borrow::Cow;

/// Word starts whose `our` is the British spelling of `or`.
const OUR: &[&str] = &[
    "armour",
    "behaviour",
    "colour",
    "endeavour",
    "favour",
    "flavour",
    "harbour",
    "honour",
    "humour",
    "labour",
    "neighbour",
    "odour",
    "rigour",
    "rumour",
    "savour",
    "tremour",
    "tumour",
    "vapour",
    "vigour",
];

/// Word starts spelt with `ae` or `oe` in British English, and the
/// American spelling of that start.
const STARTS: &[(&str, &str)] = &[
    ("aetiol", "etiol"),
    ("anaesth", "anesth"),
    ("caec", "cec"),
    ("coeliac", "celiac"),
    ("faec", "fec"),
    ("foet", "fet"),
    ("gynaec", "gynec"),
    ("oedem", "edem"),
    ("oesoph", "esoph"),
    ("oestr", "estr"),
    ("orthopaed", "orthoped"),
    ("paed", "ped"),
];

/// Words ending in `-ise` (the part before `e`/`ed`/`ing`/…) whose `-ise`
/// is not the British spelling of `-ize`.
const ISE_KEEP: &[&str] = &[
    "advertis",
    "anis",
    "appris",
    "chastis",
    "circumcis",
    "compris",
    "compromis",
    "concis",
    "demis",
    "despis",
    "devis",
    "disguis",
    "excis",
    "exercis",
    "expertis",
    "franchis",
    "improvis",
    "incis",
    "merchandis",
    "mortis",
    "paradis",
    "precis",
    "premis",
    "promis",
    "revis",
    "supervis",
    "surmis",
    "surpris",
    "televis",
    "treatis",
];

/// Suffixes of a British `-ise` verb after its `is`.
const ISE_ENDS: &[&str] = &["e", "ed", "es", "ing", "er", "ers", "ation", "ations"];

/// The American spelling of an ASCII lower-case word (borrowed when
/// unchanged).
pub fn american(word: &str) -> Cow<'_, str> {
    let mut w = Cow::Borrowed(word);
    if let Some(stem) = OUR.iter().find(|s| word.starts_with(*s)) {
        let cut = stem.len() - 2;
        w = Cow::Owned(format!("{}r{}", &word[..cut], &word[stem.len()..]));
    }
    if let Some((from, to)) = STARTS.iter().find(|(from, _)| w.starts_with(from)) {
        w = Cow::Owned(format!("{to}{}", &w[from.len()..]));
    }
    if w.contains("aem") {
        w = Cow::Owned(w.replace("aem", "em"));
    }
    if w.contains("rrhoea") {
        w = Cow::Owned(w.replace("rrhoea", "rrhea"));
    }
    if let Some(z) = ize(&w) {
        w = Cow::Owned(z);
    }
    w
}

/// The `-ize`/`-yze` spelling of a British `-ise`/`-yse` word.
fn ize(w: &str) -> Option<String> {
    for end in ISE_ENDS {
        let Some(base) = w.strip_suffix(end) else { continue };
        if let Some(head) = base.strip_suffix("ys") {
            // analyse, paralyse, catalyse (not "analyses", also the plural of analysis).
            return (*end != "es" && head.len() >= 3).then(|| format!("{head}yz{end}"));
        }
        let Some(head) = base.strip_suffix("is") else { continue };
        if head.len() < 4 || base.ends_with("wis") || ISE_KEEP.contains(&base) {
            return None;
        }
        return Some(format!("{head}iz{end}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn british_to_american() {
        for (gb, us) in [
            ("tumour", "tumor"),
            ("tumours", "tumors"),
            ("behavioural", "behavioral"),
            ("haemoglobin", "hemoglobin"),
            ("leukaemia", "leukemia"),
            ("hyperglycaemia", "hyperglycemia"),
            ("oestrogen", "estrogen"),
            ("paediatric", "pediatric"),
            ("diarrhoea", "diarrhea"),
            ("randomised", "randomized"),
            ("organisation", "organization"),
            ("characterising", "characterizing"),
            ("analysed", "analyzed"),
        ] {
            assert_eq!(american(gb), us, "{gb}");
        }
        for same in
            ["tumor", "exercise", "promised", "otherwise", "rise", "noise", "analyses", "four", "hour", "precise"]
        {
            assert_eq!(american(same), same);
        }
    }
}
