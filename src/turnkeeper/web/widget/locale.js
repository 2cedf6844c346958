/**
 * The reader's language: which of the server's catalogs to read (negotiated as the CLI and
 * the server do), and a label's sentence from it. Pure: nothing here touches the page.
 */

export const DEFAULT_LOCALE = "en";

const isText = (value) => typeof value === "string";

/** The locales the reader asks for, best first: `lang`, then the browser's. */
export function wantedLocales(attribute, browser = globalThis.navigator) {
  const languages = browser ? browser.languages || [browser.language] : [];
  return [attribute, ...languages].filter((name) => isText(name) && name.trim());
}

/**
 * The first of `wanted` the server has a catalog for, as the server spells it: each
 * tag itself, then its shorter forms ("zh-Hant-TW", "zh-Hant", "zh"); else English.
 */
export function negotiate(wanted, locales) {
  const known = new Map(locales.map((tag) => [tag.toLowerCase(), tag]));
  for (const name of wanted) {
    const parts = name.trim().replace(/_/g, "-").toLowerCase().split("-");
    for (let n = parts.length; n > 0; n -= 1) {
      const found = known.get(parts.slice(0, n).join("-"));
      if (found) return found;
    }
  }
  return DEFAULT_LOCALE;
}

/** What `assistant.json` says: the assistant's name, its catalogs, whether readers sign in. */
export function described(about) {
  const locales = about && Array.isArray(about.locales) ? about.locales.filter(isText) : [];
  return {
    name: about && isText(about.name) ? about.name : "",
    users: Boolean(about) && about.users === true,
    locales,
  };
}

/** The reader's catalog, and English under it. */
export class Catalog {
  constructor(lang, entries, en) {
    this.lang = lang;
    this.entries = entries;
    this.en = en;
  }

  /** The reader's sentence for `key`, else English, else null: never the key itself. */
  text(key) {
    if (!isText(key)) return null;
    const found = Object.hasOwn(this.entries, key) ? this.entries[key] : this.en[key];
    return isText(found) && found.trim() ? found : null;
  }
}
