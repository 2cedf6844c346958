import { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { AgUiPage } from "./AgUiPage.jsx";
import { ChatPage } from "./ChatPage.jsx";
import { SERVER } from "./server.js";
import "./style.css";

// Two pages on one turnkeeper server, chosen by the hash: #chat (the default), #ag-ui.
const PAGES = {
  chat: ["useChat (@ai-sdk/react)", ChatPage],
  "ag-ui": ["HttpAgent (@ag-ui/client)", AgUiPage],
};

function current() {
  const name = location.hash.slice(1);
  return name in PAGES ? name : "chat";
}

function App() {
  const [page, setPage] = useState(current);
  useEffect(() => {
    const follow = () => setPage(current());
    addEventListener("hashchange", follow);
    return () => removeEventListener("hashchange", follow);
  }, []);
  const Page = PAGES[page][1];
  return (
    <>
      <nav>
        {Object.entries(PAGES).map(([name, [title]]) => (
          <a key={name} href={`#${name}`} aria-current={name === page ? "page" : undefined}>
            {title}
          </a>
        ))}
        <span className="server">{SERVER}</span>
      </nav>
      <Page key={page} />
    </>
  );
}

createRoot(document.getElementById("root")).render(<App />);
