// Keeps one broken view from blanking the page: shows what failed, in text, and a way to retry.

import { Component, type ReactNode } from "react";

interface Props {
  name: string;
  children: ReactNode;
}

export class ErrorBoundary extends Component<Props, { error: Error | null }> {
  override state = { error: null as Error | null };

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  override componentDidCatch(error: Error): void {
    document.body.dataset.viewError = `${this.props.name}: ${error.message}`;
  }

  override render() {
    if (this.state.error) {
      return (
        <section className="card error-banner" role="alert">
          <h2>The {this.props.name} failed to draw</h2>
          <p className="error-message">{this.state.error.message}</p>
          <button type="button" onClick={() => this.setState({ error: null })}>
            Try again
          </button>
        </section>
      );
    }
    return this.props.children;
  }
}
