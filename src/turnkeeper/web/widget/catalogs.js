/**
 * What the widget reads before it shows anything: the assistant's description
 * (`assistant.json`: its name, whether readers sign in, its locales) and the catalog of the
 * reader's locale (negotiated, locale.js), with English beside it for what it lacks.
 */

import { Catalog, DEFAULT_LOCALE, described, negotiate } from "./locale.js";

/** `{catalog, name, users}` read through `client` (client.js) for a reader who wants
 *  `wanted`; null when the server could not say (try again). */
export async function loadCatalogs(client, wanted) {
  const [about, en] = await Promise.all([
    client.file("assistant.json"),
    client.file(`locales/${DEFAULT_LOCALE}.json`),
  ]);
  if (!about.ok || !en.ok || !about.body || !en.body) return null;
  const { name, users, locales } = described(about.body);
  const lang = negotiate(wanted, locales);
  const path = `locales/${encodeURIComponent(lang)}.json`;
  const own = lang === DEFAULT_LOCALE ? en : await client.file(path);
  if (!own.ok && own.kind !== "gone") return null;
  // A catalog the server lists but does not serve: English rather than nothing.
  const [shown, entries] = own.ok && own.body ? [lang, own.body] : [DEFAULT_LOCALE, en.body];
  const catalog = new Catalog(shown, entries, en.body);
  // The reader's locale's name for the assistant (`assistant.name`), else its own name.
  return { catalog, name: catalog.text("assistant.name") || name, users };
}
